"""The phase runner (kubeadm's cmd/phases/workflow): an ordered tree of phases, `--skip-phases`, `phase <name>` commands.

A `Phase` is a declaration (name, short help, run function, children, inherited flags). A `Runner` walks the tree in
order, builds the run data once and lazily (only when the first phase runs), and wraps every failure as
"error execution phase <path>: <cause>". `phase_commands()` turns the tree into click sub-commands, one per phase, each
exposing only the flags its phase inherits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import click

from pykubeadm.errors import KubeadmError, PhaseError, ValidationError

__all__ = ["Phase", "Runner", "all_phase", "phase_done_hooks"]

C = TypeVar("C")

#: A click option decorator (`click.option(...)`); applied to a built `click.Command` it returns that command.
OptionDecorator = Callable[[Callable[..., Any]], Callable[..., Any]]


#: Called with a phase's path (e.g. "bootstrap-token") each time a phase's own run function has returned: how the lab
#: learns how far the `init` it forked has got (lab.forkcli).
phase_done_hooks: list[Callable[[str], None]] = []


@dataclass(frozen=True)
class Phase(Generic[C]):
    """One step of a workflow. `run(data)` does the work; children run after it, in order."""

    name: str
    short: str
    long: str = ""
    example: str = ""
    run: Callable[[C], None] | None = None
    run_if: Callable[[C], bool] | None = None
    children: tuple[Phase[C], ...] = ()
    inherit_flags: tuple[str, ...] = ()
    hidden: bool = False
    #: An "all" phase: as a sub-command it runs its siblings; in the full workflow it is not run on its own.
    run_all_siblings: bool = False


def all_phase(short: str, inherit_flags: Sequence[str] = ()) -> Phase[Any]:
    """The `all` child kubeadm adds to phases with children."""
    return Phase(name="all", short=short, inherit_flags=tuple(inherit_flags), run_all_siblings=True)


@dataclass
class Runner(Generic[C]):
    """Runs a phase tree against run data built by `build_data` (called at most once)."""

    phases: Sequence[Phase[C]]
    build_data: Callable[[], C]
    _data: C | None = field(default=None, init=False)

    @classmethod
    def without_data(cls, phases: Sequence[Phase[C]]) -> Runner[C]:
        """A runner for the phase tree alone (help text, `phase_commands`): running a phase on it is an error, as
        its `invoke` callbacks build a runner with real data from the parsed flags."""

        def no_data() -> C:
            raise KubeadmError("internal error: this phase runner only describes the phase tree; it has no run data")

        return cls(phases, no_data)

    # --- introspection -------------------------------------------------------------------------------------------
    def walk(self) -> Iterator[tuple[str, Phase[C]]]:
        """(path, phase) in execution order; paths are `/`-joined (`certs/apiserver`)."""

        def rec(prefix: str, phases: Iterable[Phase[C]]) -> Iterator[tuple[str, Phase[C]]]:
            for p in phases:
                path = f"{prefix}{p.name}"
                yield path, p
                yield from rec(path + "/", p.children)

        yield from rec("", self.phases)

    def help_block(self) -> str:
        """The "executes the following phases" block of `init --help`."""
        rows: list[tuple[str, str]] = []

        def rec(depth: int, phases: Iterable[Phase[C]]) -> None:
            for p in phases:
                if p.hidden or p.run_all_siblings:
                    continue
                label = p.name if depth == 0 else "  " * (depth - 1) + "  /" + p.name
                rows.append((label, p.short))
                rec(depth + 1, p.children)

        rec(0, self.phases)
        width = max(len(r[0]) for r in rows) + 2
        return "\n".join(f"{label.ljust(width)}{short}" for label, short in rows)

    def write_help(self, formatter: click.HelpFormatter, head: str, usage: str) -> None:
        """The help text of a command with phases: `head`, then which phases `usage` executes (the `help_block`)."""
        formatter.write_paragraph()
        formatter.write_text(head)
        formatter.write_paragraph()
        formatter.write_text(f'The "{usage}" command executes the following phases:')
        with formatter.indentation():
            formatter.write("```\n" + self.help_block() + "\n```\n")

    @property
    def data(self) -> C:
        if self._data is None:
            self._data = self.build_data()
        return self._data

    # --- execution -----------------------------------------------------------------------------------------------
    def validate_skip(self, skip: Iterable[str]) -> list[str]:
        known = {path for path, _ in self.walk()}
        skip = [s.strip() for s in skip if s.strip()]
        unknown = [s for s in skip if s not in known]
        if unknown:
            raise ValidationError([f"invalid phase name(s) in --skip-phases: {', '.join(unknown)}"])
        return skip

    def run(self, skip_phases: Iterable[str] = ()) -> C:
        """Run the whole workflow, honouring `skip_phases` (a skipped parent skips its children)."""
        skip = self.validate_skip(skip_phases)
        self._run_tree(self.phases, "", skip)
        return self.data

    def run_phase(self, path: str) -> C:
        """Run one phase (and its children); an `all` phase runs its siblings."""
        parent_path, _, name = path.rpartition("/")
        siblings = self._children_of(parent_path)
        phase = next((p for p in siblings if p.name == name), None)
        if phase is None:
            raise KubeadmError(f"phase {path!r} does not exist")
        if phase.run_all_siblings:
            # like kubeadm, `phase <parent> all` runs the parent's own step first (e.g. "[certs] Using certificateDir")
            parent = self._phase_at(parent_path) if parent_path else None
            if parent is not None and parent.run is not None:
                self._call(parent.run, parent_path)
            self._run_tree(
                [p for p in siblings if not p.run_all_siblings], parent_path + "/" if parent_path else "", []
            )
        else:
            self._run_tree([phase], parent_path + "/" if parent_path else "", [])
        return self.data

    def _phase_at(self, path: str) -> Phase[C] | None:
        return next((p for p_path, p in self.walk() if p_path == path), None)

    def _call(self, run: Callable[[C], None], path: str) -> None:
        try:
            run(self.data)
        except PhaseError:
            raise
        except KubeadmError as e:
            raise PhaseError(path, e) from e

    def _children_of(self, path: str) -> Sequence[Phase[C]]:
        if not path:
            return self.phases
        for p_path, p in self.walk():
            if p_path == path:
                return p.children
        raise KubeadmError(f"phase {path!r} does not exist")

    def _run_tree(self, phases: Iterable[Phase[C]], prefix: str, skip: list[str]) -> None:
        for p in phases:
            path = f"{prefix}{p.name}"
            if p.run_all_siblings or path in skip:
                continue
            if p.run_if is not None and not p.run_if(self.data):
                continue
            if p.run is not None:
                self._call(p.run, path)
                for hook in tuple(phase_done_hooks):  # a hook may remove itself
                    hook(path)
            self._run_tree(p.children, path + "/", skip)

    # --- CLI -----------------------------------------------------------------------------------------------------
    def phase_commands(
        self,
        options: Callable[[str], OptionDecorator],
        invoke: Callable[[Runner[C], str, dict[str, Any]], None],
    ) -> click.Group:
        """A click group `phase` with one sub-command per phase. `options(flag)` returns the click option decorator of
        a flag name; `invoke(runner, path, params)` prepares the data from the parsed flags and runs the phase."""

        group = click.Group(name="phase", help="Use this command to invoke single phase of the workflow")

        def make(path: str, p: Phase[C]) -> click.Command:
            def callback(**params: Any) -> None:
                invoke(self, path, params)

            children = [c for c in p.children]
            help_text = p.long or p.short
            cmd: click.Command
            if children:
                group = click.Group(name=p.name, help=help_text, invoke_without_command=True)

                def group_callback(**params: Any) -> None:
                    ctx = click.get_current_context()
                    if ctx.invoked_subcommand is None:
                        invoke(self, path, params)

                group.callback = group_callback
                for child in children:
                    if not child.hidden:
                        group.add_command(make(f"{path}/{child.name}", child))
                cmd = group
            else:
                cmd = click.Command(name=p.name, help=help_text, callback=callback)
            if p.example:
                cmd.epilog = "Examples:\n" + p.example
            flags = set(p.inherit_flags)
            for child in children:  # a parent accepts its children's flags, like kubeadm's "all"
                flags |= set(child.inherit_flags)
            for flag in sorted(flags):
                decorated = options(flag)(cmd)
                assert isinstance(decorated, click.Command)  # a click option decorator adds to a command in place
                cmd = decorated
            return cmd

        for p in self.phases:
            if not p.hidden:
                group.add_command(make(p.name, p))
        return group
