"""`keras_rnmt.precision`: a 16-bit policy on a CPU that would emulate it gets a warning."""

import pytest

from keras_rnmt import precision

X86_AVX2 = """processor\t: 0
vendor_id\t: AuthenticAMD
flags\t\t: fpu sse sse2 avx avx2 fma f16c
bogomips\t: 4890.80
"""
ARM_BF16 = """processor\t: 0
Features\t: fp asimd fphp asimdhp bf16 i8mm
CPU implementer\t: 0x41
"""


def test_cpu_flags_reads_x86_and_arm_cpuinfo(tmp_path):
    x86, arm = tmp_path / "x86", tmp_path / "arm"
    x86.write_text(X86_AVX2)
    arm.write_text(ARM_BF16)
    assert precision.cpu_flags(str(x86)) == {"fpu", "sse", "sse2", "avx", "avx2", "fma", "f16c"}
    assert "bf16" in precision.cpu_flags(str(arm))
    assert precision.cpu_flags(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("policy, flags, accelerator, warns", [
    ("mixed_bfloat16", {"avx2", "fma"}, False, True),
    ("mixed_float16", {"avx2", "avx512_bf16"}, False, True),
    ("mixed_bfloat16", {"avx2", "avx512f", "avx512_bf16"}, False, False),
    ("mixed_bfloat16", {"amx_bf16"}, False, False),
    ("mixed_bfloat16", {"fp", "asimd", "bf16"}, False, False),  # Arm
    ("mixed_float16", {"avx512_fp16"}, False, False),
    ("mixed_bfloat16", {"avx2"}, True, False),  # a GPU computes it
    ("float32", {"avx2"}, False, False),
])
def test_a_16_bit_policy_warns_only_where_the_cpu_would_emulate_it(
        policy, flags, accelerator, warns):
    message = precision.emulated_precision_warning(policy, flags, accelerator)
    assert (message is not None) == warns
    if warns:
        assert policy in message and "float32" in message
        assert all(flag in message for flag in precision.NATIVE_FLAGS[policy])


def test_unknown_cpu_flags_give_no_warning(monkeypatch):
    monkeypatch.setattr(precision, "cpu_flags", lambda: None)
    assert precision.emulated_precision_warning("mixed_bfloat16", accelerator=False) is None


def test_this_machine_has_a_cpu_answer():
    """Whatever this machine is, the question has an answer without raising."""
    message = precision.emulated_precision_warning("mixed_bfloat16")
    assert isinstance(precision.accelerator_present(), bool)
    # The default arguments are this machine's own flags and accelerator.
    assert message == precision.emulated_precision_warning(
        "mixed_bfloat16", precision.cpu_flags(), precision.accelerator_present())
    assert message is None or "mixed_bfloat16" in message


def test_translator_loading_under_an_emulated_policy_warns(monkeypatch, trained_run):
    from keras_rnmt.translator import Translator

    monkeypatch.setattr(precision, "cpu_flags", lambda: {"avx2"})
    monkeypatch.setattr(precision, "accelerator_present", lambda: False)
    with pytest.warns(RuntimeWarning, match="mixed_bfloat16"):
        translator = Translator.from_run(str(trained_run), dtype_policy="mixed_bfloat16")
    assert translator.model.dtype_policy.name == "mixed_bfloat16"


CPUS = [({"avx2", "fma"}, False), ({"avx512_fp16"}, False), ({"avx512_bf16"}, False),
        ({"amx_bf16"}, False), ({"avx2"}, True)]


@pytest.mark.parametrize("flags, accelerator", CPUS)
def test_bfloat16_matmul_operands_warn_exactly_where_mixed_bfloat16_would(flags, accelerator):
    emulated = precision.emulated_precision_warning("mixed_bfloat16", flags, accelerator)
    message = precision.emulated_matmul_precision_warning("bfloat16", flags, accelerator)
    assert (message is not None) == (emulated is not None)
    assert (message is not None) == (not flags & {"avx512_bf16", "amx_bf16"} and not accelerator)
    if message:
        assert "matmul_precision='bfloat16'" in message
        assert "matmul_precision='float32'" in message
        assert all(flag in message for flag in precision.NATIVE_FLAGS["mixed_bfloat16"])
    assert precision.emulated_matmul_precision_warning("float32", flags, accelerator) is None
