"""`tests/xla_test_flags.py`, the probe that picks the suite's extra XLA flags."""

import pytest
import xla_test_flags


# The probe starts JAX and TensorFlow processes of its own, the same from every pass.
@pytest.mark.backends("torch")
def test_the_probe_gives_a_flag_only_where_both_xlas_know_it():
    # An unknown flag aborts each XLA's process: the probe must refuse it, not pass it on.
    assert not xla_test_flags.accepted("--xla_cpu_no_such_flag=1")
    assert xla_test_flags.accepted("--xla_backend_optimization_level=0")
