"""`upgrade diff`: unified diffs of manifests, kubeadm's file labels and context size."""

from __future__ import annotations

from pykubeadm.phases.upgrade.diff import manifest_diff

OLD = "".join(f"line{i}\n" for i in range(10)).replace("line5", "image: kube-apiserver:v1.32.4")
NEW = OLD.replace("v1.32.4", "v1.33.0")


def test_equal_manifests_have_no_diff() -> None:
    assert manifest_diff(OLD, OLD, "/etc/kubernetes/manifests/kube-apiserver.yaml") == ""


def test_unified_diff_with_default_context() -> None:
    out = manifest_diff(OLD, NEW, "/etc/kubernetes/manifests/kube-apiserver.yaml")
    assert out.splitlines() == [
        "--- /etc/kubernetes/manifests/kube-apiserver.yaml",
        "+++ new manifest",
        "@@ -3,7 +3,7 @@",
        " line2",
        " line3",
        " line4",
        "-image: kube-apiserver:v1.32.4",
        "+image: kube-apiserver:v1.33.0",
        " line6",
        " line7",
        " line8",
    ]


def test_context_lines() -> None:
    out = manifest_diff(OLD, NEW, "a.yaml", context_lines=0)
    assert out.splitlines()[2:] == ["@@ -6 +6 @@", "-image: kube-apiserver:v1.32.4", "+image: kube-apiserver:v1.33.0"]
