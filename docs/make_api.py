"""Write docs/api.md, the API reference, from the public names' signatures and docstrings.

Run `python docs/make_api.py` after changing a public signature or docstring; a test fails
while docs/api.md is out of date.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "api.md"
MODULES = (
    ("jaxderiv", "The library: ops, spec files, the checker."),
    (
        "jaxderiv.records",
        "Op records: what verification knows of an entry, declared beside its forward in its family module.",
    ),
    ("jaxderiv.check.opdb", "The op database: every family module's records, frozen."),
    ("jaxderiv.nn", "Flax NNX layers on jaxderiv ops (needs the `flax` extra)."),
    ("jaxderiv.nn.functional", "torch.nn.functional forms on jaxderiv ops."),
    ("jaxderiv.torch", "Import torch.export graphs onto jaxderiv ops (needs the `torch` extra)."),
)


def _signature(obj) -> str:
    """The call signature; for a class, its __init__'s without `self` (NNX modules hide it)."""
    try:
        if inspect.isclass(obj) and "__init__" in vars(obj):
            sig = inspect.signature(obj.__init__)
            return str(sig.replace(parameters=list(sig.parameters.values())[1:]))
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""


def _doc(obj) -> str:
    return inspect.cleandoc(obj.__doc__) if obj.__doc__ else "(no docstring)"


def _methods(cls) -> list[str]:
    out = []
    for name, member in vars(cls).items():
        if name.startswith("_") or not (inspect.isfunction(member) or isinstance(member, property)):
            continue
        if isinstance(member, property):
            out.append(f"- `.{name}` (property): {_doc(member).splitlines()[0]}")
        else:
            out.append(f"- `.{name}{_signature(member)}`: {_doc(member).splitlines()[0]}")
    return out


def _section(module_name: str, blurb: str) -> list[str]:
    module = __import__(module_name, fromlist=["__all__"])
    lines = [f"## `{module_name}`", "", blurb, ""]
    for name in sorted(module.__all__):
        if name == "aten":
            lines += [
                "### `aten`",
                "",
                "Every op of the default spec, as `aten.<name>.<overload>` (`aten.add.Tensor`, `aten.abs.default`), built on first use.",
                "",
            ]
            continue
        obj = getattr(module, name)
        if inspect.ismodule(obj):
            lines += [f"### `{name}`", "", _doc(obj).splitlines()[0], ""]
        elif inspect.isclass(obj):
            lines += [f"### class `{name}{_signature(obj)}`", "", _doc(obj), ""] + _methods(obj) + [""]
        elif callable(obj):
            lines += [f"### `{name}{_signature(obj)}`", "", _doc(obj), ""]
    return lines


def render() -> str:
    lines = ["# API reference", "", "Generated from the docstrings by `python docs/make_api.py`.", ""]
    for name, blurb in MODULES:
        lines += _section(name, blurb)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT}", file=sys.stderr)
