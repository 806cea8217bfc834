#!/usr/bin/env python3
"""Writes the NumPy-made .npy fixtures of tests/engine/test_npy.cpp.

Run once with NumPy installed (`pip install numpy` in a virtual environment):
    python3 tests/data/npy/make_fixtures.py
The files are committed; the tests do not need NumPy.
"""
import os

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def save(name, array, version=None):
    path = os.path.join(here, name)
    if version is None:
        np.save(path, array, allow_pickle=True)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, array, version=version, allow_pickle=False)


# Readable: one per dtype, a scalar, an empty array, format versions 2.0 and 3.0.
save("f32_2x3.npy", (np.arange(6, dtype="<f4").reshape(2, 3) * 0.5 - 1).astype("<f4"))
save("f16_4.npy", np.array([1.0, -2.5, 65504.0, 6e-8], dtype="<f2"))
save("f64_3.npy", np.array([0.1, -2.5, 1e30], dtype="<f8"))
save("i32_2x2.npy", np.array([[1, -2], [2147483647, -2147483648]], dtype="<i4"))
save("i64_3.npy", np.array([0, -1, 2**62 + 1], dtype="<i8"))
save("bool_5.npy", np.array([True, False, True, True, False]))
save("scalar_f32.npy", np.array(3.25, dtype="<f4"))
save("empty_0x3_f32.npy", np.zeros((0, 3), dtype="<f4"))
save("v2_i32.npy", np.arange(4, dtype="<i4"), version=(2, 0))
save("v3_f32.npy", np.array([[1.5], [-0.25]], dtype="<f4"), version=(3, 0))
# Refused, each with its own message.
save("fortran_f32.npy", np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
save("bigendian_f32.npy", np.arange(3, dtype=">f4"))
save("complex_c8.npy", np.array([1 + 2j], dtype="<c8"))
save("structured.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
save("object.npy", np.array([1, "a"], dtype=object))
