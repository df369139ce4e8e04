"""The admission chain: every mutating plugin (in order) before any validating plugin; first error rejects.

Built by `authn.config.build_auth` from --enable-admission-plugins; the core's write handlers call `admit()` before
the strategy and `validate()` right before storage (or `run()` for both).
"""

from __future__ import annotations

from collections.abc import Sequence

from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, MutatingPlugin, ValidatingPlugin

__all__ = ["AdmissionChain"]


class AdmissionChain:
    def __init__(self, plugins: Sequence[object] = ()):
        self.plugins = list(plugins)

    @property
    def names(self) -> list[str]:
        return [getattr(p, "name", type(p).__name__) for p in self.plugins]

    async def admit(self, attrs: AdmissionAttributes) -> None:
        """Run the mutating phase (may change attrs.obj)."""
        for plugin in self.plugins:
            if isinstance(plugin, MutatingPlugin) and hasattr(plugin, "admit") and plugin.handles(attrs.operation):
                await plugin.admit(attrs)

    async def validate(self, attrs: AdmissionAttributes) -> None:
        """Run the validating phase (after defaulting/strategy, before storage)."""
        for plugin in self.plugins:
            if isinstance(plugin, ValidatingPlugin) and plugin.handles(attrs.operation):
                await plugin.validate(attrs)

    async def run(self, attrs: AdmissionAttributes) -> None:
        await self.admit(attrs)
        await self.validate(attrs)
