"""Adam whose PyTorch update is one fused kernel (Kingma & Ba, 2015, Algorithm 1)."""

import math

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_rnmt")
class Adam(keras.optimizers.Adam):
    """`keras.optimizers.Adam`, with its update run by PyTorch's fused kernel under torch.

    The update is Keras' (Algorithm 1 with Keras' ε placement): m ← β1·m + (1−β1)·g,
    v ← β2·v + (1−β2)·g², θ ← θ − α_t·m / (√v + ε) with α_t = lr·√(1−β2^t) / (1−β1^t),
    after global-norm clipping g ← g·c / max(‖g‖, c) when ``global_clipnorm`` = c is set.

    Under PyTorch, Keras runs it as ten ``torch._foreach_*`` passes over the weights, each
    writing a temporary copy of them, and clips with one sum per weight: 69-89 ms a step
    for SB's 12.8M weights on the Intel AMX host, about a fifth of the training step
    (benchmarks/RESULTS.md §1, "PyTorch: Adam in one fused kernel"). Here ``torch._fused_adam_``
    reads and writes each weight, moment and gradient once, with the clipping scale folded
    in (its ``grad_scale`` divides the gradients): 14 ms. PyTorch places ε after the bias
    correction, √v / √(1−β2^t) + ε'; passing ε' = ε / √(1−β2^t) makes the two updates equal
    up to rounding (both bias corrections are then computed in float64 on the host, which
    reads the step count every step). With ``global_clipnorm`` the gradients passed in are
    scaled in place, as ``torch.nn.utils.clip_grad_norm_`` does. Weights or gradients that are
    not all float32 on one device, and ``clipnorm``/``clipvalue``, take Keras' path.

    Under TensorFlow and JAX this is `keras.optimizers.Adam` unchanged: their compiled
    training step fuses Keras' update already.

    Args: those of `keras.optimizers.Adam`.

    Example:
    >>> import numpy as np
    >>> w = keras.Variable(np.ones(3, "float32"))
    >>> optimizer = Adam(learning_rate=0.1, global_clipnorm=1.0)
    >>> optimizer.apply([ops.convert_to_tensor(np.array([3.0, 0.0, -4.0], "float32"))], [w])
    >>> [round(float(x), 4) for x in ops.convert_to_numpy(w)]  # first step: θ − lr·sign(g)
    [0.9, 1.0, 1.1]

    References:
        Kingma & Ba, 2015. Adam: A Method for Stochastic Optimization. arXiv:1412.6980.
    """

    def _clip_gradients(self, grads):
        self._grad_scale = None
        if self.global_clipnorm and _all_float32(grads):
            # Applied inside the fused kernel (or by `_backend_update_step`'s fallback).
            self._grad_scale = _inverse_clip_scale(grads, self.global_clipnorm)
            return grads
        return super()._clip_gradients(grads)

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        scale = getattr(self, "_grad_scale", None)
        self._grad_scale = None
        params = [variable.value for variable in trainable_variables]
        if not _all_float32(grads + params) or len({str(p.device) for p in params + grads}) > 1:
            if scale is not None:
                import torch

                grads = torch._foreach_div(grads, scale)
            return super()._backend_update_step(grads, trainable_variables, learning_rate)
        _fused_update(self, grads, trainable_variables, params, learning_rate, scale)


def _all_float32(tensors):
    """Whether we are under PyTorch and every tensor is a dense float32 torch tensor."""
    if keras.backend.backend() != "torch":
        return False
    import torch

    return all(isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.layout == torch.strided
               for t in tensors)


def _inverse_clip_scale(grads, clip_norm):
    """max(‖g‖, c) / c over all gradients (NaN when ‖g‖ is not finite, as Keras' clipping
    gives): the divisor that `torch._fused_adam_`'s ``grad_scale`` applies."""
    import torch

    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    scale = torch.clamp(norm, min=clip_norm) / clip_norm
    return torch.where(torch.isfinite(norm), scale, torch.full_like(scale, math.nan))


def _fused_update(optimizer, grads, variables, params, learning_rate, grad_scale):
    """One `torch._fused_adam_` call over every weight: Keras' Adam update (class docstring)."""
    import torch

    index = optimizer._get_variable_index
    momentums = [optimizer._momentums[index(v)].value for v in variables]
    velocities = [optimizer._velocities[index(v)].value for v in variables]
    velocity_hats = ([optimizer._velocity_hats[index(v)].value for v in variables]
                     if optimizer.amsgrad else [])
    step = int(ops.convert_to_numpy(optimizer.iterations)) + 1
    epsilon = optimizer.epsilon / math.sqrt(1.0 - optimizer.beta_2 ** step)
    steps = [torch.full((), float(step), dtype=torch.float32, device=params[0].device)]
    torch._fused_adam_(
        params, grads, momentums, velocities, velocity_hats, steps * len(params),
        lr=float(ops.convert_to_numpy(learning_rate)), beta1=float(optimizer.beta_1),
        beta2=float(optimizer.beta_2), weight_decay=0.0, eps=epsilon,
        amsgrad=bool(optimizer.amsgrad), maximize=False, grad_scale=grad_scale)
