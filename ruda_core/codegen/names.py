"""C identifiers for the names of a kernel: the user's spelling, mangled only where it must be.

A :class:`NameTable` hands out unique identifiers for one generated translation unit. A name is
kept as written unless it is reserved by the target (a keyword, a type, a builtin function the
emitter may call), starts with the prefix of generated helpers (``ruda_``), or is reserved by C or
C++ (a leading double underscore, or an underscore and a capital). Mangling appends ``_`` and, if
that is taken too, a number. This module knows no target; dialects pass their reserved words in.
"""

from __future__ import annotations

import re

__all__ = ["C99_KEYWORDS", "CXX_KEYWORDS", "HELPER_PREFIX", "MATH_NAMES", "NameTable", "words"]


def words(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``."""
    return frozenset(text.split())


#: Prefix of every generated helper function; user names with it are mangled.
HELPER_PREFIX = "ruda_"

#: C99 keywords plus the names stdbool.h and the usual headers define.
C99_KEYWORDS = words(
    """
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while _Bool _Complex _Imaginary bool true false
    NULL main INFINITY NAN size_t ptrdiff_t intptr_t uintptr_t int8_t int16_t int32_t
    int64_t uint8_t uint16_t uint32_t uint64_t printf
    """
)

#: C++ keywords (CUDA C++ is C++).
CXX_KEYWORDS = words(
    """
    alignas alignof and and_eq asm bitand bitor catch char16_t char32_t class compl concept
    consteval constexpr constinit const_cast co_await co_return co_yield decltype delete
    dynamic_cast explicit export friend mutable namespace new noexcept not not_eq nullptr
    operator or or_eq private protected public reinterpret_cast requires static_assert
    static_cast template this thread_local throw try typeid typename using virtual wchar_t
    xor xor_eq
    """
)

#: Math functions the emitter may call, in every spelling (C99 ``f`` suffix included).
MATH_NAMES = frozenset(
    name + suffix
    for name in words(
        """
        exp exp2 expm1 log log2 log10 log1p sqrt rsqrt cbrt sin cos tan asin acos atan atan2
        sinh cosh tanh asinh acosh atanh erf erfc lgamma floor ceil rint trunc hypot fmod
        remainder copysign fabs fmin fmax fma pow isnan isinf isfinite min max abs
        """
    )
    for suffix in ("", "f")
)

_RESERVED_SHAPE = re.compile(r"^(__|_[A-Z])")
_NOT_IDENT = re.compile(r"[^0-9A-Za-z_]")


class NameTable:
    """Unique C identifiers for one translation unit. Not thread-safe; one per emission.

    :param reserved: exact names the target reserves.
    :param reserved_prefixes: prefixes of target builtins (``"atomic_"``, ``"get_"`` …).
    """

    __slots__ = ("_prefixes", "_reserved", "_taken")

    def __init__(self, reserved: frozenset[str], reserved_prefixes: tuple[str, ...] = ()) -> None:
        self._reserved = reserved
        self._prefixes = (HELPER_PREFIX, *reserved_prefixes)
        self._taken: set[str] = set()

    def _usable(self, name: str) -> bool:
        return (
            name not in self._reserved
            and name not in self._taken
            and not name.startswith(self._prefixes)
            and _RESERVED_SHAPE.match(name) is None
        )

    def claim(self, wanted: str) -> str:
        """A fresh identifier for ``wanted``: ``wanted`` itself when it is free and allowed,
        else a mangled form. Deterministic: equal claim sequences give equal names."""
        base = _NOT_IDENT.sub("_", wanted) or "v"
        if base[0].isdigit() or _RESERVED_SHAPE.match(base) or base.startswith(self._prefixes):
            base = "v" + base
        candidate = base if self._usable(base) else base.rstrip("_") + "_"
        number = 0
        while not self._usable(candidate):
            number += 1
            candidate = f"{base.rstrip('_')}_{number}"
        self._taken.add(candidate)
        return candidate
