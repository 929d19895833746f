"""`matmul_precision("bfloat16")` (JAX, PyTorch): products from bfloat16-rounded operands with
float32 sums, forward and backward; float32 otherwise; a clear error elsewhere (TensorFlow)
or for a bad name."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnmt import matmul_precision as mp
from keras_rnmt import precision
from keras_rnmt.attention.base import MatrixDense
from keras_rnmt.training.config import TrainConfig

EPS = 2.0 ** -10  # below bfloat16's half-ulp at 1 (2^-8): 1 + EPS rounds to 1


def bf16(array):
    """`array` rounded to bfloat16, as float64 (the reference's exact arithmetic)."""
    return np.asarray(ops.convert_to_numpy(
        ops.cast(ops.cast(np.asarray(array, "float32"), "bfloat16"), "float32")), "float64")


def value_and_gradients(x, kernel, readout):
    """`(x W, ∂Σ(x W ⊙ R)/∂x, ∂Σ(x W ⊙ R)/∂W)` through `mp.matmul`, as float32 arrays."""
    if keras.backend.backend() == "torch":
        import torch

        x, kernel = (torch.tensor(a, requires_grad=True) for a in (x, kernel))
        y = mp.matmul(x, kernel)
        (y * torch.as_tensor(readout)).sum().backward()
        return tuple(t.detach().numpy() for t in (y, x.grad, kernel.grad))
    import jax

    def loss(x, kernel):
        return (mp.matmul(x, kernel) * readout).sum()

    d_x, d_kernel = jax.grad(loss, argnums=(0, 1))(x, kernel)
    return np.asarray(mp.matmul(x, kernel)), np.asarray(d_x), np.asarray(d_kernel)


@pytest.mark.backends("jax", "torch")
def test_bfloat16_rounds_the_operands_forward_and_backward_golden():
    x = np.array([[1 + EPS, 2.0]], "float32")
    kernel = np.array([[3.0, 1.0], [1 + EPS, 2.0]], "float32")
    readout = np.array([[1 + EPS, 1.0]], "float32")
    # float32: [3(1 + ε) + 2(1 + ε), (1 + ε) + 4] = [5 + 5ε, 5 + ε].
    y, _, _ = value_and_gradients(x, kernel, readout)
    np.testing.assert_allclose(y, [[5 + 5 * EPS, 5 + EPS]], rtol=0, atol=1e-6)
    with mp.matmul_precision_scope("bfloat16"):
        y, d_x, d_kernel = value_and_gradients(x, kernel, readout)
    # From bfloat16 operands, x = [1, 2], W = [[3, 1], [1, 2]], R = [1, 1]:
    # x W = [5, 5]; ∂/∂x = R Wᵀ = [4, 3]; ∂/∂W = xᵀ R = [[1, 1], [2, 2]].
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, [[5.0, 5.0]])
    np.testing.assert_array_equal(d_x, [[4.0, 3.0]])
    np.testing.assert_array_equal(d_kernel, [[1.0, 1.0], [2.0, 2.0]])


@pytest.mark.backends("jax", "torch")
def test_a_matrix_vector_product_stays_float32():
    x = np.array([[1 + EPS, 2.0]], "float32")
    kernel = np.array([[3.0], [1 + EPS]], "float32")
    with mp.matmul_precision_scope("bfloat16"):
        y = ops.convert_to_numpy(mp.matmul(x, kernel))
    np.testing.assert_allclose(y, [[5 + 5 * EPS]], rtol=0, atol=1e-6)  # not 3 + 2 = 5


# Under PyTorch the first two are small enough (m·k·n ≤ 16³) that `mp.torch_product` rounds
# their operands itself; the last two go to oneDNN with its bfloat16 setting.
@pytest.mark.backends("jax", "torch")
@pytest.mark.parametrize("shape, kernel_shape", [((7, 24), (24, 9)), ((3, 5, 24), (24, 9)),
                                                 ((64, 32), (32, 48)),
                                                 ((4, 16, 32), (32, 48))])
def test_bfloat16_products_equal_exact_products_of_the_rounded_operands(shape, kernel_shape):
    rng = np.random.default_rng(0)
    k, n = kernel_shape
    x = rng.normal(size=shape).astype("float32")
    kernel = rng.normal(size=kernel_shape).astype("float32")
    readout = rng.normal(size=shape[:-1] + (n,)).astype("float32")
    with mp.matmul_precision_scope("bfloat16"):
        y, d_x, d_kernel = value_and_gradients(x, kernel, readout)
    rx, rk, rr = bf16(x), bf16(kernel), bf16(readout)
    assert y.shape == shape[:-1] + (n,) and d_x.shape == shape and d_kernel.shape == (k, n)
    np.testing.assert_allclose(y, rx @ rk, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d_x, rr @ rk.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d_kernel, rx.reshape(-1, k).T @ rr.reshape(-1, n),
                               rtol=1e-5, atol=1e-5)
    # ... and not the float32 products.
    assert np.abs(y - x.astype("float64") @ kernel).max() > 1e-3


def test_float32_is_the_default_and_the_plain_product():
    assert mp.matmul_precision() == "float32"
    rng = np.random.default_rng(1)
    x, kernel = rng.normal(size=(4, 6)).astype("float32"), rng.normal(size=(6, 3)).astype("float32")
    np.testing.assert_array_equal(ops.convert_to_numpy(mp.matmul(x, kernel)),
                                  ops.convert_to_numpy(ops.matmul(x, kernel)))


@pytest.mark.backends("jax", "torch")
def test_bfloat16_operands_of_a_mixed_policy_keep_the_plain_product():
    x = ops.cast(np.ones((2, 3), "float32"), "bfloat16")
    kernel = ops.cast(np.ones((3, 4), "float32"), "bfloat16")
    with mp.matmul_precision_scope("bfloat16"):
        y = mp.matmul(x, kernel)
    assert keras.backend.standardize_dtype(y.dtype) == "bfloat16"


@pytest.mark.backends("jax", "torch")
def test_matrix_dense_under_bfloat16_is_bias_plus_the_rounded_product():
    layer = MatrixDense(5, activation="tanh")
    x = np.random.default_rng(2).normal(size=(2, 3, 8)).astype("float32")
    layer.build(x.shape)
    layer.bias.assign(np.linspace(-1, 1, 5).astype("float32"))
    with mp.matmul_precision_scope("bfloat16"):
        y = ops.convert_to_numpy(layer(x))
    expected = np.tanh(bf16(x) @ bf16(ops.convert_to_numpy(layer.kernel))
                       + ops.convert_to_numpy(layer.bias))
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    # float32 again outside the scope
    assert np.abs(y - ops.convert_to_numpy(layer(x))).max() > 1e-4


def test_the_scope_restores_the_previous_precision():
    with pytest.raises(ValueError, match="Unknown matmul_precision 'tf32'"):
        with mp.matmul_precision_scope("tf32"):
            pass
    assert mp.matmul_precision() == "float32"


@pytest.mark.parametrize("build", [lambda: mp.set_matmul_precision("float16"),
                                   lambda: TrainConfig(matmul_precision="float16")])
def test_an_unknown_precision_names_the_valid_choices(build):
    with pytest.raises(ValueError, match="Unknown matmul_precision 'float16'. Valid choices: "
                                         "'float32', 'bfloat16'"):
        build()


@pytest.mark.backends("tensorflow")
def test_bfloat16_under_tensorflow_is_a_clear_error():
    with pytest.raises(ValueError, match="implemented under JAX and PyTorch only .* the backend is "
                                         f"'{keras.backend.backend()}'"):
        mp.set_matmul_precision("bfloat16")
    assert mp.matmul_precision() == "float32"


@pytest.mark.backends("jax", "torch")
@pytest.mark.parametrize("flags, warns", [({"avx2", "fma"}, True), ({"amx_bf16"}, False)])
def test_setting_bfloat16_warns_where_the_cpu_would_emulate_it(monkeypatch, flags, warns):
    import warnings

    monkeypatch.setattr(precision, "cpu_flags", lambda: flags)
    monkeypatch.setattr(precision, "accelerator_present", lambda: False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mp.set_matmul_precision("bfloat16")
        mp.set_matmul_precision("bfloat16")  # set again: no second warning
        mp.set_matmul_precision("float32")
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == int(warns)
    assert all("emulates the bfloat16 products" in m for m in messages)
    assert all(w.filename == __file__ for w in caught)  # points at the caller


@pytest.mark.backends("jax", "torch")
def test_the_scope_s_warning_names_the_with_statement(monkeypatch):
    import warnings

    monkeypatch.setattr(precision, "cpu_flags", lambda: {"avx2", "fma"})
    monkeypatch.setattr(precision, "accelerator_present", lambda: False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with mp.matmul_precision_scope("bfloat16"):
            assert mp.matmul_precision() == "bfloat16"
    assert mp.matmul_precision() == "float32"
    [warning] = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert warning.filename == __file__, warning.filename  # not contextlib.py


@pytest.mark.parametrize("flags, native", [({"avx2", "fma"}, False),
                                           ({"avx2", "avx512_bf16"}, True),
                                           ({"amx_bf16"}, True), (None, True)])
def test_onednn_is_trusted_with_bfloat16_only_on_a_cpu_that_has_it(monkeypatch, flags, native):
    # On an AVX2-only CPU oneDNN ignores its bf16 setting and multiplies in float32.
    monkeypatch.setattr(precision, "cpu_flags", lambda: flags)
    mp._onednn_has_bf16.cache_clear()
    try:
        assert mp._onednn_has_bf16() is native
    finally:
        mp._onednn_has_bf16.cache_clear()


@pytest.mark.backends("torch")
def test_without_native_bfloat16_pytorch_rounds_a_large_product_s_operands(monkeypatch):
    import torch

    monkeypatch.setattr(mp, "_onednn_has_bf16", lambda: False)
    rng = np.random.default_rng(1)
    a = rng.normal(size=(64, 32)).astype("float32")  # m·k·n above oneDNN's threshold
    b = rng.normal(size=(32, 48)).astype("float32")
    y = mp.torch_product(torch.as_tensor(a), torch.as_tensor(b)).numpy()
    np.testing.assert_allclose(y, bf16(a) @ bf16(b), rtol=1e-5, atol=1e-5)
    assert not np.allclose(y, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)
