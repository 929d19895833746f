"""A backend-aware ``scan`` whose per-step outputs may differ from the carry.

``keras.ops.scan`` under TensorFlow requires the per-step output ``ys`` to have the
structure, shapes and dtypes of the carry (keras PR #19681) and silently drops the rest.
The decoder unroll emits attention weights and outputs that are not part of its carry,
so it uses this helper: ``jax.lax.scan`` under JAX, a ``tf.while_loop`` with
``TensorArray`` under TensorFlow, and a plain Python loop under PyTorch (eager).
"""

import keras
from keras import ops, tree


def scan(fn, init, xs, length=None):
    """Loop ``fn(carry, x) -> (carry, y)`` over the leading axis of ``xs``.

    Args:
        fn: the step function. ``carry`` keeps its structure, shapes and dtypes;
            ``y`` may be any structure of tensors, fixed across steps.
        init: the initial carry (any nested structure of tensors).
        xs: a nested structure of tensors of shape ``(T, ...)``, or ``None`` with
            ``length`` given.
        length: number of steps when ``xs`` is ``None``.

    Returns:
        ``(final_carry, ys)`` with every leaf of ``ys`` stacked to ``(T, ...)``.
    """
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.lax.scan(fn, init, xs, length=length)
    if backend == "tensorflow":
        return _tf_scan(fn, init, xs, length)
    return _python_scan(fn, init, xs, length)


def _steps(xs, length):
    if xs is None:
        return length
    return ops.shape(tree.flatten(xs)[0])[0]


def _python_scan(fn, init, xs, length):
    carry, ys = init, []
    n = _steps(xs, length)
    for t in range(int(n)):
        x = None if xs is None else tree.map_structure(lambda a, t=t: a[t], xs)
        carry, y = fn(carry, x)
        ys.append(y)
    if not ys:
        raise ValueError("scan over zero steps")
    stacked = tree.map_structure(lambda *leaves: ops.stack(leaves, axis=0), *ys)
    return carry, stacked


def _tf_scan(fn, init, xs, length):
    import tensorflow as tf

    n = tf.shape(tree.flatten(xs)[0])[0] if xs is not None else length
    # Step 0 runs before the loop so the TensorArrays learn the dtypes of y.
    carry, y0 = fn(init, None if xs is None else tf.nest.map_structure(lambda a: a[0], xs))
    arrays = tf.nest.map_structure(
        lambda v: tf.TensorArray(v.dtype, size=n, element_shape=v.shape).write(0, v), y0
    )

    def body(t, carry, arrays):
        x = None if xs is None else tf.nest.map_structure(lambda a: a[t], xs)
        carry, y = fn(carry, x)
        arrays = tf.nest.map_structure(lambda ta, v: ta.write(t, v), arrays, y)
        return t + 1, carry, arrays

    # maximum_iterations: XLA (jit_compile=True) needs the TensorArrays' size bounded.
    _, carry, arrays = tf.while_loop(
        lambda t, *_: t < n, body, (tf.constant(1), carry, arrays), maximum_iterations=n - 1
    )
    return carry, tf.nest.map_structure(lambda ta: ta.stack(), arrays)
