"""The MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins.

Configurations are read from the apiserver's watch-fed object cache on every request, so a created, changed or
deleted configuration applies as soon as its watch event arrives. Mutating webhooks run in order (configurations by
name, webhooks as listed), each JSONPatch applied before the next call, and `reinvocationPolicy: IfNeeded` webhooks
run once more when a later webhook changed the object; validating webhooks run concurrently. A webhook that cannot
be called fails the request (`failurePolicy: Fail`, the default) with kube's `Internal error occurred: failed calling
webhook "<name>": …`, or is skipped (`Ignore`, with a failed-open audit annotation); a denial is
`admission webhook "<name>" denied the request: <message>`.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

from pykubeadm.apiserver.admission import recorder
from pykubeadm.apiserver.admission.celrequest import activation, admission_env
from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, AdmissionError, Operation
from pykubeadm.apiserver.admission.webhook import rules
from pykubeadm.apiserver.admission.webhook.caller import CallError, WebhookClient
from pykubeadm.apiserver.objects import ObjectSource
from pykubeadm.apiserver.patching.jsonpatch import apply_json_patch
from pykubeadm.cel import CompileError, EvalError
from pykubeadm.controllers.controllerutil import selector_matches
from pykubeadm.util import jsoncodec

__all__ = ["MUTATING_CONFIGS", "VALIDATING_CONFIGS", "MutatingWebhooks", "ValidatingWebhooks"]

Obj = dict[str, Any]
MUTATING_CONFIGS = "mutatingwebhookconfigurations.admissionregistration.k8s.io"
VALIDATING_CONFIGS = "validatingwebhookconfigurations.admissionregistration.k8s.io"


def _internal(message: str) -> AdmissionError:
    return AdmissionError(
        500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]}
    )


def denied(name: str, result: Obj | None) -> AdmissionError:
    """kube's ToStatusErr: the webhook's Status, its message prefixed with who denied the request."""
    result = dict(result or {})
    by = f'admission webhook "{name}" denied the request'
    code = int(result.get("code") or 0)
    if code < 400:
        code = 400
    if result.get("message"):
        message = f"{by}: {result['message']}"
    elif result.get("reason"):
        message = f"{by}: {result['reason']}"
    else:
        message = f"{by} without explanation"
    return AdmissionError(code, str(result.get("reason") or ""), message, result.get("details") or None)


class _Webhooks:
    configs: str = ""
    mutating: bool = False

    def __init__(self, source: ObjectSource, client: WebhookClient | None = None):
        self._source = source
        self._client = client or WebhookClient(source)

    def handles(self, op: Operation) -> bool:
        return op in (Operation.CREATE, Operation.UPDATE, Operation.DELETE, Operation.CONNECT)

    async def close(self) -> None:
        await self._client.close()

    async def _hooks(self) -> list[tuple[str, Obj]]:
        configs = await self._source.list(self.configs)
        out = []
        for cfg in sorted(configs, key=lambda c: (c.get("metadata") or {}).get("name", "")):
            name = (cfg.get("metadata") or {}).get("name", "")
            out += [(name, h) for h in cfg.get("webhooks") or [] if isinstance(h, dict)]
        return out

    async def _namespace_labels(self, attrs: AdmissionAttributes) -> dict[str, str] | None:
        applies, is_namespace = rules.namespace_selector_applies(attrs)
        if not applies:
            return None
        if is_namespace:
            return rules.labels_of(attrs.obj if attrs.obj is not None else attrs.old_obj)
        ns = await self._source.get("namespaces", "", attrs.namespace)
        return rules.labels_of(ns)

    async def _matching(self, attrs: AdmissionAttributes) -> list[tuple[str, Obj]]:
        if rules.exempt(attrs):
            return []
        hooks = [(c, h) for c, h in await self._hooks() if rules.matches_rules(h.get("rules") or [], attrs)]
        if not hooks:
            return []
        ns_labels = await self._namespace_labels(attrs)
        out = []
        for cfg, hook in hooks:
            selector = hook.get("namespaceSelector")
            if ns_labels is not None and selector and not selector_matches(selector, ns_labels):
                continue
            if not rules.matches_object_selector(hook.get("objectSelector"), attrs):
                continue
            if hook.get("matchConditions") and not self._conditions_match(hook, attrs):
                continue
            out.append((cfg, hook))
        return out

    def _conditions_match(self, hook: Obj, attrs: AdmissionAttributes) -> bool:
        """Every matchCondition is true; an error fails the request unless failurePolicy is Ignore (then the webhook
        is skipped)."""
        data = activation(attrs)
        for cond in hook.get("matchConditions") or []:
            try:
                result = admission_env().compile(cond.get("expression", "")).evaluate(data)
            except (CompileError, EvalError) as e:
                if hook.get("failurePolicy") == "Ignore":
                    return False
                raise _internal(
                    f'failed calling webhook "{hook.get("name", "")}": failed to evaluate match condition '
                    f'"{cond.get("name", "")}": {e}'
                ) from None
            if result is not True:
                return False
        return True

    async def _call(self, index: int, hook: Obj, attrs: AdmissionAttributes) -> Obj | None:
        """The webhook's response, or None when it failed open; raises the request's error otherwise."""
        name = str(hook.get("name") or "")
        if attrs.dry_run and hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise AdmissionError(400, "BadRequest", f'admission webhook "{name}" does not support dry run')
        try:
            response = await self._client.call(hook, attrs, mutating=self.mutating)
        except CallError as e:
            if hook.get("failurePolicy") == "Ignore":
                kind = "mutating" if self.mutating else "validating"
                recorder.annotate(f"failed-open.{kind}.webhook.admission.k8s.io/round_0_index_{index}", name)
                return None
            raise _internal(f'failed calling webhook "{name}": {e}') from None
        for key, value in (response.get("auditAnnotations") or {}).items():
            recorder.annotate(f"{name}/{key}", str(value))
        for text in response.get("warnings") or []:
            recorder.warn(str(text))
        if not response.get("allowed"):
            raise denied(name, response.get("status"))
        return response


class ValidatingWebhooks(_Webhooks):
    name = "ValidatingAdmissionWebhook"
    configs = VALIDATING_CONFIGS

    async def validate(self, attrs: AdmissionAttributes) -> None:
        hooks = await self._matching(attrs)
        if not hooks:
            return
        results = await asyncio.gather(
            *(self._call(i, h, attrs) for i, (_, h) in enumerate(hooks)), return_exceptions=True
        )
        for r in results:  # the first error in webhook order, as kube returns errs[0]
            if isinstance(r, BaseException):
                raise r


class MutatingWebhooks(_Webhooks):
    name = "MutatingAdmissionWebhook"
    configs = MUTATING_CONFIGS
    mutating = True

    async def admit(self, attrs: AdmissionAttributes) -> None:
        hooks = await self._matching(attrs)
        if not hooks:
            return
        changed_by: list[int] = []
        for i, (cfg, hook) in enumerate(hooks):
            if await self._mutate(i, 0, cfg, hook, attrs):
                changed_by.append(i)
        if not changed_by:
            return
        last = changed_by[-1]
        for i, (cfg, hook) in enumerate(hooks):  # round 1: IfNeeded webhooks the object changed after
            if hook.get("reinvocationPolicy") == "IfNeeded" and (i < last or len(changed_by) > 1):
                await self._mutate(i, 1, cfg, hook, attrs)

    async def _mutate(self, index: int, round_: int, cfg: str, hook: Obj, attrs: AdmissionAttributes) -> bool:
        response = await self._call(index, hook, attrs)
        if response is None or not response.get("patch") or attrs.operation is Operation.DELETE or attrs.obj is None:
            return False
        name = str(hook.get("name") or "")
        try:
            ops = json.loads(base64.b64decode(response["patch"]))
            patched = apply_json_patch(attrs.obj, ops)
        except Exception as e:  # a malformed patch is the webhook's fault; kube fails the request
            raise _internal(f'failed calling webhook "{name}": received invalid webhook response: {e}') from None
        if not isinstance(patched, dict) or patched == attrs.obj:
            return False
        attrs.obj.clear()
        attrs.obj.update(patched)
        recorder.annotate(
            f"mutation.webhook.admission.k8s.io/round_{round_}_index_{index}",
            jsoncodec.dumps({"configuration": cfg, "webhook": name, "mutated": True}).decode(),
        )
        return True
