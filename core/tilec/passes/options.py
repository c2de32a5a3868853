"""Typed pass options: a pass declares them as fields of a frozen attrs class named `Options`.

    class Canonicalize(ModulePass):
        name = "canonicalize"

        @attrs.frozen
        class Options:
            max_iterations: int = pass_option(10, "sweeps that may change something", minimum=0)

        def run(self, module, context) -> bool:
            ... self.options.max_iterations ...

The field `max_iterations` is the option `max-iterations` of a pipeline
(`canonicalize{max-iterations=3}`). A field's type is `bool`, `int`, `float` or `str`. Values
arrive as text from a pipeline string or as Python values from `PassManager.run(options=...)`;
`parse_pass_options` converts text to the field's type and checks it. An unknown option or a bad
value raises `PassOptionError`, naming the pass, the option and the valid options with their types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

OPTION_TYPES: tuple[type, ...] = (bool, int, float, str)
"""The types an option field may have."""


class PassOptionError(ValueError):
    """An unknown pass option or an option value of the wrong type or out of range."""


@attrs.frozen
class NoOptions:
    """The options of a pass that declares none."""


def pass_option(
    default: Any, help: str = "", *, minimum: float | None = None, choices: tuple = ()
) -> Any:
    """An option field with its `default`, a one-line `help`, and optionally the smallest value
    it accepts or the values it accepts."""
    validators = []
    if minimum is not None:
        validators.append(_at_least(minimum))
    if choices:
        validators.append(_one_of(choices))
    return attrs.field(default=default, validator=validators, metadata={"help": help})


def option_name(field_name: str) -> str:
    """The pipeline spelling of a field name: `max_iterations` -> `max-iterations`."""
    return field_name.replace("_", "-")


def option_fields(options_class: type) -> dict[str, attrs.Attribute]:
    """The option fields of `options_class` by pipeline name, their types resolved."""
    attrs.resolve_types(options_class)
    return {option_name(field.name): field for field in attrs.fields(options_class)}


def describe_options(options_class: type) -> str:
    """`max-iterations: int = 10, ...`, or `none` for a pass without options."""
    fields = option_fields(options_class)
    if not fields:
        return "none"
    return ", ".join(
        f"{name}: {_type_name(field.type)} = {_text(field.default)}"
        for name, field in fields.items()
    )


def parse_pass_options(pass_name: str, options_class: type, given: Mapping[str, Any]) -> Any:
    """An `options_class` instance from `given` (pipeline names -> text or Python values); the
    fields not given keep their defaults. Raises `PassOptionError`."""
    fields = option_fields(options_class)
    values: dict[str, Any] = {}
    for name, value in given.items():
        field = fields.get(name)
        if field is None:
            raise PassOptionError(
                f"pass '{pass_name}' has no option '{name}'; valid options: "
                f"{describe_options(options_class)}"
            )
        values[field.name] = _convert(pass_name, name, field.type, value, options_class)
    try:
        return options_class(**values)
    except ValueError as error:
        raise PassOptionError(
            f"pass '{pass_name}': {error}; valid options: {describe_options(options_class)}"
        ) from None


def check_options_class(pass_name: str, options_class: type) -> None:
    """Raise `PassOptionError` unless `options_class` is an attrs class whose fields all have
    an option type and a default."""
    if not attrs.has(options_class):
        raise PassOptionError(f"pass '{pass_name}': its Options must be an attrs class")
    for name, field in option_fields(options_class).items():
        if field.type not in OPTION_TYPES or field.default is attrs.NOTHING:
            raise PassOptionError(
                f"pass '{pass_name}': option '{name}' must have a default and one of the types "
                f"{', '.join(t.__name__ for t in OPTION_TYPES)}"
            )


def _convert(pass_name: str, name: str, type_: Any, value: Any, options_class: type) -> Any:
    converted = _from_text(type_, value) if isinstance(value, str) else _from_python(type_, value)
    if converted is None:
        raise PassOptionError(
            f"pass '{pass_name}': option '{name}' expects {_type_name(type_)}, got {value!r}; "
            f"valid options: {describe_options(options_class)}"
        )
    return converted


def _from_text(type_: Any, text: str) -> Any:
    """`text` as a `type_` value, or None where it does not read as one."""
    if type_ is str:
        return text
    if type_ is bool:
        return {"true": True, "false": False}.get(text.strip().lower())
    try:
        return type_(text.strip())
    except (TypeError, ValueError):
        return None


def _from_python(type_: Any, value: Any) -> Any:
    """`value` if it is a `type_` (an int is a float too; a bool is not an int), else None."""
    if isinstance(value, bool) != (type_ is bool):
        return None
    if type_ is float and isinstance(value, int):
        return float(value)
    return value if isinstance(value, type_) else None


def _type_name(type_: Any) -> str:
    return getattr(type_, "__name__", str(type_))


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, str) else str(value)


def _at_least(minimum: float) -> Callable[[Any, attrs.Attribute, Any], None]:
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value < minimum:
            raise ValueError(
                f"option '{option_name(attribute.name)}' must be at least {minimum}, got {value}"
            )

    return check


def _one_of(choices: tuple) -> Callable[[Any, attrs.Attribute, Any], None]:
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value not in choices:
            raise ValueError(
                f"option '{option_name(attribute.name)}' must be one of "
                f"{', '.join(map(_text, choices))}, got {_text(value)}"
            )

    return check


__all__ = [
    "OPTION_TYPES",
    "NoOptions",
    "PassOptionError",
    "check_options_class",
    "describe_options",
    "option_fields",
    "option_name",
    "parse_pass_options",
    "pass_option",
]
