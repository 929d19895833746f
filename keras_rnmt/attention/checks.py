"""Argument checks shared by the attention layers: errors name the argument and list valid values."""


def check_positive_int(owner, name, value, allow_none=False):
    """Return `value` if it is a positive int (or `None` when allowed), else raise."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        expected = "a positive int or None" if allow_none else "a positive int"
        raise ValueError(f"{owner}: `{name}` must be {expected}. Received: {name}={value!r}")
    return value


def check_choice(owner, name, value, choices):
    """Return `value` if it is one of `choices`, else raise listing them."""
    if value not in choices:
        valid = ", ".join(repr(choice) for choice in choices)
        raise ValueError(
            f"{owner}: unknown `{name}`. Valid values are {valid}. Received: {name}={value!r}"
        )
    return value
