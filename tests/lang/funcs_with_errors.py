"""A device function with a type error, for the error-location tests."""

from ruda_core.lang import Array, f32, f64, func


@func
def bad(out: Array[f32]):
    acc = f32(0)
    acc = f64(2)  # ERR
    out[0] = acc


def calls_bad(out: Array[f32]):
    bad(out)
