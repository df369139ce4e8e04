"""kubeadm's own feature gates (v1.33, `cmd/kubeadm/app/features`): names, maturity, defaults; `featureGates` checks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["FEATURES", "Feature", "enabled", "unknown_features"]


@dataclass(frozen=True)
class Feature:
    name: str
    default: bool
    stage: str  # ALPHA, BETA, GA, DEPRECATED
    locked: bool = False
    deprecation_message: str = ""


#: The gates kubeadm 1.33 knows.
FEATURES: dict[str, Feature] = {
    f.name: f
    for f in (
        Feature("ControlPlaneKubeletLocalMode", True, "BETA"),
        Feature("NodeLocalCRISocket", False, "ALPHA"),
        Feature(
            "PublicKeysECDSA",
            False,
            "DEPRECATED",
            deprecation_message="The PublicKeysECDSA feature gate is deprecated and will be removed when v1beta3 "
            "is removed. v1beta4 supports a new option 'ClusterConfiguration.EncryptionAlgorithm'.",
        ),
        Feature("RootlessControlPlane", False, "ALPHA"),
        Feature("WaitForAllControlPlaneComponents", True, "BETA"),
    )
}


def unknown_features(gates: Mapping[str, bool]) -> list[str]:
    """Names in `gates` that kubeadm does not know."""
    return [name for name in gates if name not in FEATURES]


def enabled(gates: Mapping[str, bool] | None, name: str) -> bool:
    """Whether gate `name` is on, given the user's `featureGates` (falls back to the gate's default)."""
    if gates and name in gates:
        return bool(gates[name])
    return FEATURES[name].default


def help_text() -> str:
    """The `--feature-gates` flag help, as kubeadm prints it."""
    lines = [
        "A set of key=value pairs that describe feature gates for various features. Options are:",
    ]
    for name in sorted(FEATURES):
        f = FEATURES[name]
        lines.append(f"{name}=true|false ({f.stage} - default={str(f.default).lower()})")
    return "\n".join(lines)
