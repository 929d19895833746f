"""`token_cross_entropy`: PyTorch's cross-entropy node against autograd through log_softmax."""

import numpy as np
import pytest

pytestmark = pytest.mark.backends("torch")


def _plain(torch, logits, labels, smoothing):
    log_probs = torch.log_softmax(logits, dim=-1)
    nll = -log_probs.gather(-1, labels.long()[..., None])[..., 0]
    return (1 - smoothing) * nll + smoothing * -log_probs.mean(-1)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_value_and_gradient_match_autograd_through_log_softmax(smoothing):
    import torch

    from keras_rnmt.training.torch_cross_entropy import token_cross_entropy

    generator = torch.Generator().manual_seed(0)
    logits = (torch.randn(3, 4, 11, generator=generator) * 3).requires_grad_()
    labels = torch.randint(0, 11, (3, 4), generator=generator, dtype=torch.int32)
    upstream = torch.randn(3, 4, generator=generator)

    ours = token_cross_entropy(logits, labels, smoothing)
    (ours_grad,) = torch.autograd.grad(ours, logits, upstream)
    plain = _plain(torch, logits, labels, smoothing)
    (plain_grad,) = torch.autograd.grad(plain, logits, upstream)

    assert ours.shape == (3, 4) and ours.dtype == torch.float32
    np.testing.assert_allclose(ours.detach().numpy(), plain.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours_grad.numpy(), plain_grad.numpy(), rtol=1e-5, atol=1e-7)


def test_golden_gradient_of_one_token():
    # logits (0, log 3, 0): p = (1/5, 3/5, 1/5); reference 1, ε = 0.3, V = 3:
    # ∂ℓ/∂z = p − 0.7·[v = 1] − 0.1 = (0.1, −0.2, 0.1); scaled by the upstream 2.
    import math

    import torch

    from keras_rnmt.training.torch_cross_entropy import token_cross_entropy

    logits = torch.tensor([[0.0, math.log(3.0), 0.0]], requires_grad=True)
    loss = token_cross_entropy(logits, torch.tensor([1]), 0.3)
    (gradient,) = torch.autograd.grad(loss, logits, torch.tensor([2.0]))
    np.testing.assert_allclose(gradient.numpy(), [[0.2, -0.4, 0.2]], atol=1e-6)
    expected = 0.7 * math.log(5 / 3) + 0.3 * -(2 * math.log(0.2) + math.log(0.6)) / 3
    np.testing.assert_allclose(float(loss.detach()), expected, rtol=1e-6)
