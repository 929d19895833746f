"""The output limit of a search: ⌈a·|source| + b⌉ tokens per sentence (fairseq's
`--max-len-a/b`), |source| counting the source's `</s>`."""


def check_output_limits(max_length_a, max_length_b):
    """Raise a ValueError unless `a, b >= 0` and the limit allows one token (a > 0 or b >= 1)."""
    if not (max_length_a >= 0 and max_length_b >= 0
            and (max_length_a > 0 or max_length_b >= 1)):
        raise ValueError("max_length_a and max_length_b must be >= 0 and allow one output "
                         f"token (a > 0 or b >= 1); received a={max_length_a}, "
                         f"b={max_length_b}")
