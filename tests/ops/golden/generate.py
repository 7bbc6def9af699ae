#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Generates keel's golden operator cases from PyTorch (Debian's python3-torch).

Run with Debian's interpreter, which sees the python3-torch package:

    apt-get install -y --no-install-recommends python3-torch
    /usr/bin/python3 tests/ops/golden/generate.py --seed 19 --out tests/ops/golden/cases.txt

Every case gives each input as a storage (raw little-endian bytes) plus dtype,
shape, strides and storage offset, the same for out (its storage before the
call), the scalars, and the expected values of out's view in row-major order.
The format (one record a line, whitespace-separated tokens; read by
golden_reader.hpp):

    keel-golden 1
    case <op> <source> <label>
    scalar <name> f <hex float> | i <int64>
    int <name> <int64>
    tensor <name> <dtype> <ndim> <sizes...> <strides...> <offset> <storage elements> <hex bytes>
    expect <hex bytes>             values of out's view, row-major, in out's dtype
    unfused <hex bytes>            the same where targets without FMA round the product first
    tol <hex bytes>                float32 absolute tolerance per element (absent: exact)
    end

<source> is `torch` when `expect` is PyTorch's output, or the name of the
documented rule keel follows where PyTorch 1.13 has no answer or an
undefined one (see README.md beside this script):
  half-add-alpha    float16 or bfloat16 add with a scale other than +-1: PyTorch
                    1.13 rounds alpha * other to the half type before the add
                    wherever it computes in c10::Half / c10::BFloat16
                    arithmetic: every float16 element (no vectorized float16
                    on its CPU) and the bfloat16 elements after the last full
                    16-lane vector; its vectorized bfloat16 body rounds once.
                    So PyTorch's answer depends on an element's position; keel
                    rounds once everywhere, as that vectorized body does.
  torch-common      PyTorch's output for the operands converted to the common
                    dtype first, then cast to out's dtype: its definition of a
                    mixed-dtype call, which 1.13's CPU addcmul cannot run (an
                    internal assertion, needs_dynamic_casting).
  f16-addcmul       float16 addcmul is not implemented on PyTorch 1.13's CPU:
                    its bfloat16 rule (value in float32, one rounding).
  float-to-int      a cast of NaN or an out-of-range float to an integer type
                    (undefined in C++ and so in PyTorch): keel gives 0 for NaN
                    and saturates (uint8 through int64, wrapping).
  bf16-baddbmm      bfloat16 baddbmm where PyTorch 1.13 misses the float32
                    accumulation bound (it rounds partial sums to bfloat16):
                    the exact product rounded once, with keel's bound.
  f16-baddbmm, f16-pool  float16 baddbmm and adaptive_avg_pool2d are not
                    implemented on PyTorch 1.13's CPU: the exact value rounded
                    once, with the same bound.
Every other case is `torch`: the generator checks that its model of keel's rules
agrees with PyTorch there bit for bit, and stops if it does not.
"""
import argparse
import math
import random
import sys

import numpy as np
import torch

DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int32": torch.int32,
    "int64": torch.int64, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}
NAME = {v: k for k, v in DTYPES.items()}
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
INTS = (torch.int32, torch.int64, torch.int8, torch.uint8)
UNIT = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}
LAYOUTS_IN = ("contiguous", "offset", "sliced", "transposed", "expanded")
LAYOUTS_OUT = ("contiguous", "offset", "sliced", "transposed")
F32_SPECIALS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e-40, -1.4e-45, 1.17549435e-38, 3e-8, -6e-8, 65504.0,
                65520.0, 1.00048828125, 1.00390625, 3.0e38, -3.0e38, 2.5, -0.5, 2049.0, 16777217.0, 2.0 ** 31,
                -(2.0 ** 31) - 512, 2.0 ** 63, 300.0, -129.0, 255.5, -1.0, 1e-3]

POOL_SPECIALS = [math.nan, math.inf, -math.inf, -0.0, 1e-40, 3e-8, 0.0]


class Generator:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.lines = ["keel-golden 1"]
        self.counts = {}  # (op, dtypes, source) -> cases

    # ---------------------------------------------------------------- values
    def values(self, dtype, n, specials=True, scale=None):
        """n random values of dtype; specials: a quarter special (True: all of
        F32_SPECIALS and the integer limits, or a list of floats to pick from)."""
        r = self.rng
        out = []
        for _ in range(n):
            special = specials and r.random() < 0.25
            if dtype in FLOATS:
                if special:
                    out.append(r.choice(F32_SPECIALS if specials is True else specials))
                else:
                    s = scale if scale is not None else r.choice((1.0, 100.0, 1e4))
                    out.append(r.uniform(-s, s))
            elif dtype == torch.bool:
                out.append(r.random() < 0.5)
            else:
                info = torch.iinfo(dtype)
                if special:
                    out.append(r.choice((info.min, info.max, 0, 1, -1 if info.min < 0 else 0, info.max - 1)))
                else:
                    lo, hi = (info.min, info.max) if r.random() < 0.3 else (max(info.min, -1000), min(info.max, 1000))
                    out.append(r.randint(lo, hi))
        if dtype in FLOATS:
            return torch.tensor(out, dtype=torch.float64).to(torch.float32).to(dtype)
        return torch.tensor(out, dtype=dtype)

    # ------------------------------------------------------------- layouts
    def view(self, dtype, shape, layout, fill=None, specials=True, scale=None):
        """A view of `shape` with `layout` over a fresh storage; returns (storage, view)."""
        nd = len(shape)
        strides = [0] * nd
        span = 1
        order = list(range(nd - 1, -1, -1))  # innermost first
        if layout == "transposed" and nd >= 2:
            order[0], order[1] = order[1], order[0]
        step = 2 if layout == "sliced" else 1
        for k, i in enumerate(order):
            strides[i] = step if k == 0 else span
            span = strides[i] * max(shape[i], 1)
        if layout == "expanded":
            big = [i for i in range(nd) if shape[i] > 1]
            if big:
                strides[self.rng.choice(big)] = 0
        offset = {"offset": 3, "sliced": 1}.get(layout, 0)
        extent = 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if all(shape) else 0
        n = offset + extent + 1  # one element past the view: a write there is a bug
        storage = fill(n) if fill is not None else self.values(dtype, n, specials, scale)
        return storage, torch.as_strided(storage, shape, strides, offset)

    # ----------------------------------------------------------- serialize
    @staticmethod
    def raw(t):
        t = t.contiguous().reshape(-1)
        if t.dtype in (torch.float16, torch.bfloat16):
            t = t.view(torch.int16)
        return t.numpy().tobytes().hex() or "-"

    def tensor_line(self, name, storage, v):
        nd = v.dim()
        return " ".join(["tensor", name, NAME[v.dtype], str(nd)] + [str(s) for s in v.shape] +
                        [str(s) for s in v.stride()] + [str(v.storage_offset()), str(storage.numel()),
                                                         self.raw(storage)])

    @staticmethod
    def scalar_line(name, value):
        if isinstance(value, float):
            return f"scalar {name} f {value.hex()}"
        return f"scalar {name} i {int(value)}"

    def emit(self, op, source, label, tensors, scalars, expect, unfused=None, tol=None, ints=()):
        self.lines.append(f"case {op} {source} {label}")
        for name, value in scalars:
            self.lines.append(self.scalar_line(name, value))
        for name, value in ints:
            self.lines.append(f"int {name} {value}")
        for name, storage, v in tensors:
            self.lines.append(self.tensor_line(name, storage, v))
        self.lines.append("expect " + self.raw(expect))
        if unfused is not None and not same(unfused, expect):
            self.lines.append("unfused " + self.raw(unfused))
        if tol is not None:
            self.lines.append("tol " + self.raw(tol.to(torch.float32)))
        self.lines.append("end")
        key = (op, "/".join(NAME[v.dtype] for _, _, v in tensors), source)
        self.counts[key] = self.counts.get(key, 0) + 1

    def shapes(self, count):
        """`count` shapes broadcasting to one out shape (some 0-dim, some broadcast)."""
        r = self.rng
        out = r.choice([(), (1,), (7,), (3, 5), (2, 3, 4), (4, 1, 6), (2, 17), (33,)])
        ins = []
        for _ in range(count):
            kind = r.random()
            if kind < 0.15 and out:
                ins.append(())  # 0-dim
            elif kind < 0.35 and out:
                drop = r.randint(0, len(out))
                s = list(out[drop:])
                for i in range(len(s)):
                    if r.random() < 0.4:
                        s[i] = 1
                ins.append(tuple(s))
            else:
                ins.append(out)
        # the broadcast shape is out unless every input dropped dimensions
        return ins, tuple(torch.broadcast_shapes(*ins)) if ins else out


def same(a, b):
    """Bitwise equality of two tensors, any NaN equal to any NaN."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype in FLOATS:
        x, y = a.float(), b.float()
        both_nan = torch.isnan(x) & torch.isnan(y)
        bits = Generator.raw(a) == Generator.raw(b)
        return bool(bits or torch.all(both_nan | ((x == y) & (torch.signbit(x) == torch.signbit(y)))))
    return bool(torch.equal(a, b))


def keel_accepts_add(rt):
    return rt in FLOATS or rt in (torch.int32, torch.int64)


def rounded(value, dtype):
    """A Python float converted as a scalar is: to float32, then to dtype."""
    return float(torch.tensor(value, dtype=torch.float64).to(torch.float32).to(dtype).to(torch.float32))


def castable(src, dst):
    return torch.can_cast(src, dst)


def out_dtypes(rt):
    """out's dtype: the result type, and a castable wider or different one."""
    wider = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float32,
             torch.int32: torch.int64, torch.int64: torch.float32}
    return [rt] if wider[rt] == rt else [rt, wider[rt]]


def gen_add(g, cases):
    all_dtypes = list(DTYPES.values())
    pairs = [(a, b) for a in all_dtypes for b in all_dtypes]
    done = 0
    while done < cases:
        a_t, b_t = pairs[done % len(pairs)] if done < 2 * len(pairs) else g.rng.choice(pairs)
        (sa, sb), shape = g.shapes(2)
        dummy_a = torch.empty(sa, dtype=a_t)
        dummy_b = torch.empty(sb, dtype=b_t)
        rt = torch.result_type(dummy_a, dummy_b)
        if not keel_accepts_add(rt):
            done += 1
            continue
        if rt in FLOATS:
            alpha = g.rng.choice([1.0, 1.0, -0.5, 0.3, 1.0001, 3.0, -2.7])
            if g.rng.random() < 0.2:
                alpha = int(g.rng.choice([2, -1, 3]))
        else:
            alpha = int(g.rng.choice([1, 1, -3, 2, 7, -(2 ** 31) + 5]))
        out_t = g.rng.choice(out_dtypes(rt))
        self_s, self_v = g.view(a_t, sa, g.rng.choice(LAYOUTS_IN))
        other_s, other_v = g.view(b_t, sb, g.rng.choice(LAYOUTS_IN))
        out_s, out_v = g.view(out_t, shape, g.rng.choice(LAYOUTS_OUT), fill=lambda n: torch.zeros(n, dtype=out_t))
        before = out_s.clone()
        torch.add(self_v, other_v, alpha=alpha, out=out_v)
        got = out_v.clone()
        # keel's rule: operands to the common dtype, alpha too, compute in float32.
        A = self_v.to(rt).expand(shape).contiguous()
        B = other_v.to(rt).expand(shape).contiguous()
        source = "torch"
        unfused = None
        if rt in FLOATS:
            al = rounded(alpha, rt) if isinstance(alpha, float) else float(alpha)
            if rt == torch.float32:
                al = rounded(alpha, torch.float32)
            fused = torch.add(A.float(), B.float(), alpha=al).to(rt).to(out_t)
            with np.errstate(all="ignore"):
                unf32 = A.float().numpy() + np.float32(al) * B.float().numpy()
            unfused = torch.from_numpy(np.array(unf32, dtype=np.float32).reshape(shape)).to(rt).to(out_t)
            model = fused
        else:
            model = torch.add(A, B, alpha=alpha).to(out_t)
        if not same(model, got):
            if rt in (torch.float16, torch.bfloat16) and float(alpha) not in (1.0, -1.0):
                source = "half-add-alpha"
                got = model
            else:
                sys.exit(f"add: keel's rule disagrees with PyTorch: {NAME[a_t]}{list(sa)} + {NAME[b_t]}{list(sb)} "
                         f"alpha {alpha} -> {NAME[out_t]}\n torch {got}\n model {model}")
        g.emit("add", source, f"{NAME[a_t]}+{NAME[b_t]}->{NAME[out_t]}",
               [("self", self_s, self_v), ("other", other_s, other_v), ("out", before, out_v)],
               [("alpha", alpha)], got, unfused=unfused)
        done += 1


def gen_addcmul(g, cases):
    all_dtypes = list(DTYPES.values())
    made = 0
    tries = 0
    while made < cases and tries < 50 * cases:
        tries += 1
        ts = [g.rng.choice(all_dtypes) for _ in range(3)]
        if g.rng.random() < 0.5:  # favour the common all-float and half cases
            f = g.rng.choice(FLOATS)
            ts = [f if g.rng.random() < 0.7 else t for t in ts]
        shapes, shape = g.shapes(3)
        dummies = [torch.empty(s, dtype=t) for s, t in zip(shapes, ts)]
        rt = result_type3(dummies)
        if rt is None or rt not in FLOATS:
            continue
        value = g.rng.choice([1.0, 0.5, -2.0, 0.3, 1.0001, -0.1])
        out_t = g.rng.choice(out_dtypes(rt))
        views = [g.view(t, s, g.rng.choice(LAYOUTS_IN)) for t, s in zip(ts, shapes)]
        out_s, out_v = g.view(out_t, shape, g.rng.choice(LAYOUTS_OUT), fill=lambda n: torch.zeros(n, dtype=out_t))
        before = out_s.clone()
        S, T1, T2 = (v.to(rt).expand(shape).contiguous().float() for _, v in views)
        v32 = rounded(value, torch.float32)
        fused = torch.addcmul(S, T1, T2, value=v32).to(rt).to(out_t)
        with np.errstate(all="ignore"):
            unf32 = S.numpy() + (np.float32(v32) * T1.numpy()) * T2.numpy()
        unfused = torch.from_numpy(np.array(unf32, dtype=np.float32).reshape(shape)).to(rt).to(out_t)
        source = "torch"
        if rt == torch.float16:
            source, got = "f16-addcmul", fused
        elif all(v.dtype == rt for _, v in views) and out_t == rt:
            torch.addcmul(views[0][1], views[1][1], views[2][1], value=value, out=out_v)
            got = out_v.clone()
        else:
            # PyTorch 1.13's CPU addcmul stops on an internal assertion when
            # it would have to cast (needs_dynamic_casting): ask it with the
            # operands converted to the common dtype, which is its definition.
            source = "torch-common"
            got = torch.addcmul(*(v.to(rt) for _, v in views), value=value).to(out_t)
        if source != "f16-addcmul" and not same(fused, got):
            sys.exit(f"addcmul: keel's rule disagrees with PyTorch: {[NAME[t] for t in ts]} {shapes} value {value}"
                     f" -> {NAME[out_t]}\n torch {got}\n model {fused}")
        g.emit("addcmul", source, "/".join(NAME[t] for t in ts) + f"->{NAME[out_t]}",
               [("self", *views[0]), ("tensor1", *views[1]), ("tensor2", *views[2]), ("out", before, out_v)],
               [("value", value)], got, unfused=unfused)
        made += 1


def result_type3(dummies):
    """torch.result_type over three tensors (dimensioned ones first, then 0-dim by category)."""
    try:
        return torch.addcmul(*[torch.zeros(d.shape, dtype=d.dtype) for d in dummies]).dtype
    except RuntimeError as e:
        if "not implemented for 'Half'" in str(e):
            return torch.float16
        return None


def keel_cast(src, dst_t):
    """Tensor.to(dst) with keel's rule where C++ leaves float to integer undefined; (values, used_rule)."""
    if src.dtype not in FLOATS or dst_t not in INTS:
        return src.to(dst_t), False
    x = src.double()
    info = torch.iinfo(torch.int64 if dst_t == torch.uint8 else dst_t)
    lo, hi = float(info.min), 2.0 ** (info.bits - 1)  # defined: truncation lands in [lo, hi)
    bad = torch.isnan(x) | (x <= lo - 1) | (x >= hi)
    if not bool(bad.any()):
        return src.to(dst_t), False
    vals = []
    for f in x.reshape(-1).tolist():
        if math.isnan(f):
            i = 0
        elif f <= info.min:
            i = info.min
        elif f >= 2.0 ** (info.bits - 1):
            i = info.max
        else:
            i = int(f)  # truncation toward zero
        if dst_t == torch.uint8:
            i &= 0xFF
        vals.append(i)
    return torch.tensor(vals, dtype=torch.int64).to(dst_t).reshape(src.shape), True


def gen_cast(g, per_pair):
    for a_t in DTYPES.values():
        for b_t in DTYPES.values():
            for _ in range(per_pair):
                shape = g.rng.choice([(), (1,), (9,), (3, 7), (2, 3, 5), (40,)])
                self_s, self_v = g.view(a_t, shape, g.rng.choice(LAYOUTS_IN))
                out_s, out_v = g.view(b_t, shape, g.rng.choice(LAYOUTS_OUT), fill=lambda n: torch.zeros(n, dtype=b_t))
                want, rule = keel_cast(self_v, b_t)
                source = "float-to-int" if rule else "torch"
                if not rule:
                    got = self_v.to(b_t)
                    if not same(got, want):
                        sys.exit("cast model mismatch")
                g.emit("cast", source, f"{NAME[a_t]}->{NAME[b_t]}",
                       [("self", self_s, self_v), ("out", out_s, out_v)], [], want)


def gamma(n, u):
    return n * u / (1 - n * u)


def ulp_of(dtype, mag):
    """One unit in the last place of dtype at magnitude mag (at least the smallest subnormal)."""
    mant = {torch.float32: 23, torch.float16: 10, torch.bfloat16: 7}[dtype]
    min_exp = {torch.float32: -126, torch.float16: -14, torch.bfloat16: -126}[dtype]
    e = max(math.frexp(mag)[1] - 1, min_exp) if mag > 0 and math.isfinite(mag) else min_exp
    return 2.0 ** (e - mant)


def gen_pool(g, cases):
    made = 0
    while made < cases:
        dt = g.rng.choice(FLOATS)
        nd = g.rng.choice((3, 4))
        h, w = g.rng.randint(1, 11), g.rng.randint(1, 13)
        lead = [g.rng.randint(1, 3)] + ([g.rng.randint(0 if made % 9 == 0 else 1, 2)] if nd == 4 else [])
        lead = lead[::-1] if nd == 4 else lead
        shape = tuple(lead + [h, w])
        oh, ow = g.rng.randint(0 if made % 13 == 0 else 1, 2 * h + 1), g.rng.randint(1, 2 * w + 1)  # enlarging too
        # Non-finite, signed-zero and subnormal inputs, not values whose sum overflows.
        specials = POOL_SPECIALS if made % 5 == 0 else False
        self_s, self_v = g.view(dt, shape, g.rng.choice(("contiguous", "offset", "sliced", "transposed")),
                                specials=specials, scale=100.0)
        out_shape = shape[:-2] + (oh, ow)
        out_s, out_v = g.view(dt, out_shape, g.rng.choice(LAYOUTS_OUT), fill=lambda n: torch.zeros(n, dtype=dt))
        try:
            res = torch.nn.functional.adaptive_avg_pool2d(self_v, (oh, ow))
        except RuntimeError:
            res = None
        x = self_v.double()
        exact = torch.nn.functional.adaptive_avg_pool2d(x, (oh, ow))
        absx = torch.nn.functional.adaptive_avg_pool2d(x.abs(), (oh, ow))
        # window sizes: the pooled count of a tensor of ones, times the mean.
        count = torch.zeros(oh, ow, dtype=torch.float64)
        for i in range(oh):
            for j in range(ow):
                rh = (i + 1) * h // oh + ((i + 1) * h % oh != 0) - i * h // oh
                rw = (j + 1) * w // ow + ((j + 1) * w % ow != 0) - j * w // ow
                count[i, j] = rh * rw
        u = UNIT[torch.float32]
        tol = torch.empty_like(exact)
        flat_e, flat_a, flat_t = exact.reshape(-1), absx.reshape(-1), tol.reshape(-1)
        cnt = count.expand(exact.shape).reshape(-1)
        for i in range(flat_e.numel()):
            n = int(cnt[i])
            e, a = float(flat_e[i]), float(flat_a[i])
            t = 2 * gamma(n + 1, u) * a + 2 * u * abs(e) if math.isfinite(a) else 0.0
            if dt != torch.float32 and math.isfinite(e):
                t += ulp_of(dt, abs(e) + t)
            flat_t[i] = t
        if res is None:
            if dt != torch.float16:
                raise RuntimeError("adaptive_avg_pool2d failed")
            source, want = "f16-pool", exact.to(dt)
        else:
            source, want = "torch", res
            ok = torch.isnan(want.double()) & torch.isnan(exact) | (want.double() == exact) | \
                ((want.double() - exact).abs() <= tol)
            if not bool(ok.all()):
                sys.exit(f"pool: PyTorch outside the bound: {shape} -> {(oh, ow)}")
        g.emit("adaptive_avg_pool2d", source, f"{NAME[dt]}{list(shape)}->{[oh, ow]}",
               [("self", self_s, self_v), ("out", out_s, out_v)], [], want, tol=tol, ints=[("oh", oh), ("ow", ow)])
        made += 1


def gen_baddbmm(g, cases):
    made = 0
    while made < cases:
        dt = g.rng.choice(FLOATS)
        b, m, n = g.rng.randint(0 if made % 17 == 0 else 1, 3), g.rng.randint(1, 9), g.rng.randint(1, 11)
        k = g.rng.choice((0, 1, 2, 5, 16, 70, 300)) if made % 4 else 1
        beta = g.rng.choice((0.0, 1.0, 0.5, -2.0, 0.0)) if made % 3 else 0.0
        alpha = g.rng.choice((1.0, -1.5, 0.25, 3.0))
        self_shape = g.rng.choice([(b, m, n), (n,), (m, 1), (1, m, n), ()])
        nan_self = beta == 0.0 and g.rng.random() < 0.7
        fill_self = (lambda cnt: torch.full((cnt,), math.nan, dtype=dt)) if nan_self else None
        s_s, s_v = g.view(dt, self_shape, g.rng.choice(LAYOUTS_IN), fill=fill_self, specials=False, scale=10.0)
        specials = POOL_SPECIALS if made % 7 == 0 else False
        b1_s, b1_v = g.view(dt, (b, m, k), g.rng.choice(("contiguous", "offset", "sliced", "transposed")),
                            specials=specials, scale=4.0)
        b2_s, b2_v = g.view(dt, (b, k, n), g.rng.choice(("contiguous", "offset", "sliced", "transposed")),
                            specials=specials, scale=4.0)
        out_s, out_v = g.view(dt, (b, m, n), g.rng.choice(LAYOUTS_OUT), fill=lambda cnt: torch.zeros(cnt, dtype=dt))
        before = out_s.clone()
        A, B = b1_v.double(), b2_v.double()
        prod = torch.bmm(A, B) if k else torch.zeros(b, m, n, dtype=torch.float64)
        mag = (torch.bmm(A.abs(), B.abs()) if k else torch.zeros(b, m, n, dtype=torch.float64)) * abs(alpha)
        exact = alpha * prod
        if beta != 0.0:
            S = s_v.double().expand(b, m, n)
            exact = exact + beta * S
            mag = mag + abs(beta) * S.abs()
        u = UNIT[torch.float32]
        tol = 2 * gamma(k + 2, u) * mag + 1e-45
        if dt != torch.float32:
            tol = tol + torch.tensor([ulp_of(dt, abs(e) + t) if math.isfinite(e) else 0.0
                                      for e, t in zip(exact.reshape(-1).tolist(), tol.reshape(-1).tolist())],
                                     dtype=torch.float64).reshape(exact.shape)
        tol = torch.where(torch.isfinite(mag), tol, torch.zeros_like(tol))
        try:
            torch.baddbmm(s_v, b1_v, b2_v, beta=beta, alpha=alpha, out=out_v)  # out= starts zeroed
            want, source = out_v.clone(), "torch"
            w = want.double()
            fine = torch.isfinite(exact) & torch.isfinite(mag)
            ok = ~fine | ((w - exact).abs() <= (tol / 2 + 1e-45 if dt == torch.float32 else tol))
            if not bool(ok.all()):
                if dt == torch.float32:
                    sys.exit(f"baddbmm: PyTorch outside the bound: {NAME[dt]} b{b} m{m} k{k} n{n}")
                # PyTorch 1.13's bfloat16 baddbmm rounds partial sums to
                # bfloat16 and misses the float32-accumulation bound: use the
                # exact value, rounded once, with keel's bound.
                want, source = exact.to(dt), "bf16-baddbmm"
        except RuntimeError:
            if dt != torch.float16:
                raise
            want, source = exact.to(dt), "f16-baddbmm"
        g.emit("baddbmm", source, f"{NAME[dt]}[{b},{m},{k},{n}]beta{beta}",
               [("self", s_s, s_v), ("batch1", b1_s, b1_v), ("batch2", b2_s, b2_v), ("out", before, out_v)],
               [("beta", beta), ("alpha", alpha)], want, tol=tol)
        made += 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=19)
    p.add_argument("--out", required=True)
    p.add_argument("--add", type=int, default=400)
    p.add_argument("--addcmul", type=int, default=300)
    p.add_argument("--cast-per-pair", type=int, default=3)
    p.add_argument("--pool", type=int, default=90)
    p.add_argument("--baddbmm", type=int, default=90)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    g = Generator(a.seed)
    gen_add(g, a.add)
    gen_addcmul(g, a.addcmul)
    gen_cast(g, a.cast_per_pair)
    gen_pool(g, a.pool)
    gen_baddbmm(g, a.baddbmm)
    with open(a.out, "w") as f:
        f.write("\n".join(g.lines) + "\n")
    by_op = {}
    for (op, dts, source), n in sorted(g.counts.items()):
        by_op.setdefault(op, []).append(f"{dts} {source} {n}")
    for op, rows in by_op.items():
        print(f"{op}: {sum(int(r.rsplit(' ', 1)[1]) for r in rows)} cases")
        for r in rows:
            print("  " + r)


if __name__ == "__main__":
    main()
