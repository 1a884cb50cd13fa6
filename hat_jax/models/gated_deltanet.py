"""Gated DeltaNet: the linear-attention token mixer of Qwen3-Next / Qwen3.5.

Per value head, a state S [DK, DV] is decayed and corrected toward each new value:

    S_t = a_t S_{t-1} + beta_t k_t (v_t - a_t S_{t-1}^T k_t)^T,   o_t = S_t^T q_t

with a_t = exp(g_t), g_t = -exp(A_log) * softplus(a_proj(x_t) + dt_bias) <= 0 and
beta_t = sigmoid(b_proj(x_t)); q and k are l2-normalised and q is scaled by DK^-1/2.
q, k, v come from one projection through a depthwise causal convolution (kernel K,
silu). The output goes through a per-head RMSNorm gated by silu(z) and `out_proj`.

Two equal forms (tested against each other and a per-step reference):
  * `chunk_gated_delta_rule`: training / prefill. Chunks of 64 positions; inside a
    chunk the updates collapse into a unit-lower-triangular solve (the WY / UT
    representation), across chunks one `lax.scan` carries S. transformers'
    `torch_chunk_gated_delta_rule`, step for step.
  * `recurrent_gated_delta_rule`: decoding, a `lax.scan` over positions.

Packed documents: a cache-free call splits the recurrence (and the convolution) where
the attention mask does not let a position see its predecessor (`segments_from_mask`),
so a document-masked batch equals each document run alone.

Decoding keeps `GDNState` per layer: the last K-1 convolution inputs and S (float32).
Padding (mask False) leaves both untouched: padded inputs are zeroed (as HF does),
their g and beta are set to 0 (an identity step), and the convolution state is cut
at each row's last real token, so right-padded rows of different lengths are exact.

Dims: B batch, T positions, C conv channels (2 * HK * DK + HV * DV), W = K - 1,
HK/HV key/value heads, DK/DV their head dims, N chunks, L chunk length.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx, struct
from jaxtyping import Array, Bool, Float, Int

from hat_jax.models.config import ModelConfig
from hat_jax.models.layers import _linear
from hat_jax.models.norms import GatedRMSNorm

CHUNK = 64  # as transformers and FLA: numerics match chunk for chunk


@struct.dataclass
class GDNState:
    """One linear-attention layer's decoding state."""

    conv: Float[Array, "B W C"]  # the last K - 1 inputs of the convolution
    recurrent: Float[Array, "B HV DK DV"]  # S, float32


def _delta_step(s, xs):
    """One position: S <- a S + beta k (v - a S^T k)^T; o = S^T q. s [B, H, DK, DV]."""
    q_t, k_t, v_t, g_t, b_t = xs  # [B, H, *]
    s = s * jnp.exp(g_t)[..., None, None]
    mem = jnp.einsum("bhkv,bhk->bhv", s, k_t)
    delta = (v_t - mem) * b_t[..., None]
    s = s + k_t[..., :, None] * delta[..., None, :]
    return s, jnp.einsum("bhkv,bhk->bhv", s, q_t)


def recurrent_gated_delta_rule(
    q: Float[Array, "B T H DK"],
    k: Float[Array, "B T H DK"],
    v: Float[Array, "B T H DV"],
    g: Float[Array, "B T H"],
    beta: Float[Array, "B T H"],
    state: Float[Array, "B H DK DV"],
) -> tuple[Float[Array, "B T H DV"], Float[Array, "B H DK DV"]]:
    """The delta rule one position at a time (float32 in, float32 out)."""
    xs = tuple(jnp.moveaxis(x, 1, 0) for x in (q, k, v, g, beta))  # T first
    state, out = jax.lax.scan(_delta_step, state, xs)
    return jnp.moveaxis(out, 0, 1), state


def recurrent_states(
    q: Float[Array, "B T H DK"],
    k: Float[Array, "B T H DK"],
    v: Float[Array, "B T H DV"],
    g: Float[Array, "B T H"],
    beta: Float[Array, "B T H"],
    state: Float[Array, "B H DK DV"],
) -> tuple[Float[Array, "B T H DV"], Float[Array, "B T1 H DK DV"]]:
    """`recurrent_gated_delta_rule` keeping S before and after every position.

    Returns (out, states) with states[:, i] = S after the first i positions
    (T1 = T + 1; states[:, 0] is `state`): what speculative decoding rolls back
    to when only the first i of T verified tokens are accepted.
    """

    def step(s, xs):
        s, out = _delta_step(s, xs)
        return s, (out, s)

    xs = tuple(jnp.moveaxis(x, 1, 0) for x in (q, k, v, g, beta))  # T first
    _, (out, states) = jax.lax.scan(step, state, xs)
    states = jnp.concatenate([state[None], states], axis=0)  # [T1, B, H, DK, DV]
    return jnp.moveaxis(out, 0, 1), jnp.moveaxis(states, 0, 1)


def select_state(state: GDNState, n: Int[Array, " B"]) -> GDNState:
    """From per-position states (`keep_states=True`), row b's after n[b] inputs."""
    rows = jnp.arange(n.shape[0])
    return GDNState(conv=state.conv[rows, n], recurrent=state.recurrent[rows, n])


def chunk_gated_delta_rule(
    q: Float[Array, "B T H DK"],
    k: Float[Array, "B T H DK"],
    v: Float[Array, "B T H DV"],
    g: Float[Array, "B T H"],
    beta: Float[Array, "B T H"],
    state: Float[Array, "B H DK DV"],
    *,
    segment_ids: Int[Array, "B T"] | None = None,
    chunk: int = CHUNK,
) -> tuple[Float[Array, "B T H DV"], Float[Array, "B H DK DV"]]:
    """The delta rule over chunks: equal to `recurrent_gated_delta_rule`.

    `chunk` must be a power of two (`unit_lower_inverse`). With `segment_ids`
    (contiguous runs, packed documents) each run starts from a zero state: the
    first run continues `state`, the returned state is the last's.
    """
    b, t, h, _ = k.shape
    pad = (-t) % chunk  # zero padding: g = beta = 0 is an identity step
    n = (t + pad) // chunk
    if segment_ids is None:
        seg = jnp.zeros((b, 1, n, chunk), jnp.int32)
    else:
        seg = jnp.pad(segment_ids, [(0, 0), (0, pad)], mode="edge")
        seg = seg.reshape(b, 1, n, chunk)  # [B, 1, N, L]
    # which positions read the state carried into their chunk / write the one out
    cont = (seg == seg[..., :1]).astype(jnp.float32)
    tail = (seg == seg[..., -1:]).astype(jnp.float32)

    def chunked(x):  # [B, T, H, ...] -> [B, H, N, L, ...]
        x = jnp.pad(x, [(0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 2))
        x = jnp.moveaxis(x, 2, 1)
        return x.reshape(b, h, n, chunk, *x.shape[3:])

    q, k, v, g, beta = (chunked(x) for x in (q, k, v, g, beta))
    kb, vb = k * beta[..., None], v * beta[..., None]
    cum = jnp.cumsum(g, axis=-1)  # [B, H, N, L] log decay since the chunk start
    ok = jnp.tril(jnp.ones((chunk, chunk), bool))  # i >= j, same segment
    ok = ok & (seg[..., :, None] == seg[..., None, :])
    diff = jnp.where(ok, cum[..., :, None] - cum[..., None, :], 0.0)
    decay = jnp.where(ok, jnp.exp(diff), 0.0)  # [B, H, N, L, L]
    a = jnp.einsum("...id,...jd->...ij", kb, k) * decay
    intra = jnp.einsum("...id,...jd->...ij", q, k) * decay
    # (I + strictly_lower(a)) X = [beta v, beta k e^cum]: the UT transform.
    rhs = jnp.concatenate([vb, kb * (jnp.exp(cum) * cont)[..., None]], axis=-1)
    x = unit_lower_inverse(a) @ rhs
    new_v, k_cum = x[..., : v.shape[-1]], x[..., v.shape[-1] :]
    q = q * (jnp.exp(cum) * cont)[..., None]
    k = k * (jnp.exp(cum[..., -1:] - cum) * tail)[..., None]
    chunk_decay = (jnp.exp(cum[..., -1]) * cont[..., -1])[..., None, None]

    def step(s, xs):  # s [B, H, DK, DV]; xs: one chunk, [B, H, L, *]
        nv, kc, qc, ic, kd, cd = xs
        v_new = nv - kc @ s  # the part of v the old state does not predict
        out = qc @ s + ic @ v_new
        return s * cd + jnp.swapaxes(kd, -1, -2) @ v_new, out

    xs = tuple(jnp.moveaxis(x, 2, 0) for x in (new_v, k_cum, q, intra, k, chunk_decay))
    state, out = jax.lax.scan(step, state, xs)  # out [N, B, H, L, DV]
    out = jnp.moveaxis(out, 0, 2).reshape(b, h, n * chunk, -1)[:, :, :t]
    return jnp.moveaxis(out, 1, 2), state  # [B, T, H, DV]


def unit_lower_inverse(a: Float[Array, "... L L"]) -> Float[Array, "... L L"]:
    """(I + strictly_lower(a))^-1 by block doubling; L a power of two.

    A unit lower-triangular M = [[A, 0], [C, B]] has the inverse
    [[A^-1, 0], [-B^-1 C A^-1, B^-1]]. Starting from 1 x 1 blocks (each inverse
    is 1), every level joins neighbouring diagonal blocks with two batched
    matmuls: log2(L) levels instead of transformers' L - 1 sequential row
    updates (`torch_chunk_gated_delta_rule`'s loop), the same inverse up to fp32
    rounding. Not `lax.linalg.triangular_solve`: on jaxlib 0.10.2's CPU runtime
    a train step through its gradient deadlocks now and then (the process idles
    forever waiting for the step's result; seen with the hybrid's SFT step).
    """
    size = a.shape[-1]
    if size & (size - 1):
        raise ValueError(f"unit_lower_inverse needs a power-of-two size, got {size}")
    lead = a.shape[:-2]
    m = jnp.tril(a, -1)
    inv = jnp.ones((*lead, size, 1, 1), a.dtype)  # [..., NB, s, s] diagonal blocks
    s = 1
    while s < size:
        nb = size // (2 * s)  # pairs joined at this level
        blocks = m.reshape(*lead, nb, 2, s, nb, 2, s)
        idx = jnp.arange(nb)
        c = blocks[..., idx, 1, :, idx, 0, :]  # [NB, ..., s, s]: rows 2p+1, cols 2p
        c = jnp.moveaxis(c, 0, -3)
        inv = inv.reshape(*lead, nb, 2, s, s)
        upper, lower = inv[..., 0, :, :], inv[..., 1, :, :]
        corner = -(lower @ c @ upper)
        zeros = jnp.zeros_like(upper)
        top = jnp.concatenate([upper, zeros], axis=-1)
        bottom = jnp.concatenate([corner, lower], axis=-1)
        inv = jnp.concatenate([top, bottom], axis=-2)  # [..., NB, 2s, 2s]
        s *= 2
    return inv.reshape(*lead, size, size)


def l2norm(x: Float[Array, "... D"], eps: float = 1e-6) -> Float[Array, "... D"]:
    """x / sqrt(sum(x^2) + eps), as FLA and transformers define it."""
    return x * jax.lax.rsqrt(jnp.sum(x * x, axis=-1, keepdims=True) + eps)


def segments_from_mask(allowed: Bool[Array, "B T T"]) -> Int[Array, "B T"]:
    """Run ids of a cache-free attention mask: t continues t - 1 iff it sees it.

    A document (packing) mask starts a run at each document; padding keys start
    runs of their own, which the padding mask already makes identity steps.
    """
    sees_prev = jnp.diagonal(allowed, offset=-1, axis1=1, axis2=2)  # [B, T - 1]
    starts = jnp.concatenate(
        [jnp.ones_like(sees_prev[:, :1]), ~sees_prev.astype(bool)], axis=1
    )
    return jnp.cumsum(starts.astype(jnp.int32), axis=1)


def conv_state_after(
    xcat: Float[Array, "B S C"], mask: Bool[Array, "B T"] | None, width: int
) -> Float[Array, "B W C"]:
    """The `width` inputs ending at each row's last real token (xcat = [state, x])."""
    if mask is None:
        return xcat[:, xcat.shape[1] - width :]
    idx = jnp.arange(mask.shape[1])
    start = jnp.max(jnp.where(mask, idx, -1), axis=1) + 1  # [B]; 0 keeps the state
    rows = start[:, None] + jnp.arange(width)  # [B, W]
    return jnp.take_along_axis(xcat, rows[:, :, None], axis=1)


class CausalConv1d(nnx.Module):
    """Depthwise causal convolution, weight [C, 1, K] as HF's `nn.Conv1d` stores it."""

    def __init__(self, channels: int, kernel: int, *, param_dtype, rngs: nnx.Rngs):
        bound = 1.0 / math.sqrt(kernel)  # torch's default for a depthwise conv
        init = nnx.initializers.uniform(2 * bound)
        w = init(rngs.params(), (channels, 1, kernel), param_dtype) - bound
        self.weight = nnx.Param(w)

    def __call__(
        self,
        x: Float[Array, "B T C"],
        state: Float[Array, "B W C"],
        segment_ids: Int[Array, "B T"] | None = None,
    ):
        """(silu(conv(x)) [B, T, C], xcat = [state, x] [B, W + T, C]).

        With `segment_ids` no tap reaches into another segment (the state counts
        as the first one's past).
        """
        w = self.weight[...][:, 0, :].astype(x.dtype)  # [C, K]
        xcat = jnp.concatenate([state.astype(x.dtype), x], axis=1)
        t, kernel = x.shape[1], w.shape[1]
        taps = [xcat[:, j : j + t] * w[:, j] for j in range(kernel)]
        if segment_ids is not None:
            first = jnp.repeat(segment_ids[:, :1], kernel - 1, axis=1)
            seg = jnp.concatenate([first, segment_ids], axis=1)  # [B, W + T]
            taps = [
                tap * (seg[:, j : j + t] == segment_ids)[..., None].astype(x.dtype)
                for j, tap in enumerate(taps)
            ]
        return jax.nn.silu(sum(taps)), xcat


class GatedDeltaNet(nnx.Module):
    """HF `Qwen3_5MoeGatedDeltaNet`; parameter names follow its state dict."""

    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        d, pd = cfg.hidden_size, cfg.jnp_param_dtype
        self.hk, self.hv = cfg.linear_num_key_heads, cfg.linear_num_value_heads
        self.dk, self.dv = cfg.linear_key_head_dim, cfg.linear_value_head_dim
        if self.hv % self.hk:
            raise ValueError(f"linear value heads {self.hv} % key heads {self.hk}")
        self.kernel = cfg.linear_conv_kernel_dim
        key_dim, value_dim = self.hk * self.dk, self.hv * self.dv
        self.conv_dim = 2 * key_dim + value_dim
        self.in_proj_qkv = _linear(cfg, d, self.conv_dim, False, rngs)
        self.in_proj_z = _linear(cfg, d, value_dim, False, rngs)
        self.in_proj_b = _linear(cfg, d, self.hv, False, rngs)
        self.in_proj_a = _linear(cfg, d, self.hv, False, rngs)
        self.conv1d = CausalConv1d(
            self.conv_dim, self.kernel, param_dtype=pd, rngs=rngs
        )
        self.dt_bias = nnx.Param(jnp.ones((self.hv,), pd))
        a = jax.random.uniform(rngs.params(), (self.hv,), jnp.float32, 0.01, 16.0)
        self.A_log = nnx.Param(jnp.log(a).astype(pd))
        self.norm = GatedRMSNorm(self.dv, eps=cfg.rms_norm_eps, param_dtype=pd)
        self.out_proj = _linear(cfg, value_dim, d, False, rngs)

    def init_cache(self, batch: int, length: int, dtype) -> GDNState:
        del length  # the state does not grow
        return GDNState(
            conv=jnp.zeros((batch, self.kernel - 1, self.conv_dim), dtype),
            recurrent=jnp.zeros((batch, self.hv, self.dk, self.dv), jnp.float32),
        )

    def __call__(
        self,
        x: Float[Array, "B T D"],
        *,
        mask: Bool[Array, "B T"] | None = None,
        allowed: Bool[Array, "B T S"] | None = None,
        cache: GDNState | None = None,
        keep_states: bool = False,
        **_,
    ) -> tuple[Float[Array, "B T D"], GDNState | None]:
        """(output [B, T, D], next state or None).

        `mask` marks real tokens. Without a cache, `allowed` (the attention mask,
        S = T) also splits the recurrence: position t continues from t - 1 only if
        it may attend to it, so packed documents (`segment_ids` masks) stay apart.
        `keep_states` (with a cache, no padding): the state after each prefix of
        the T inputs, conv [B, T1, W, C] and recurrent [B, T1, HV, DK, DV] with
        T1 = T + 1 (index 0: the cache as given); `select_state` picks one per row.
        """
        b, t, _ = x.shape
        if mask is not None:
            x = x * mask[..., None].astype(x.dtype)
        seg = None
        if cache is None and allowed is not None and allowed.shape[-1] == t:
            seg = segments_from_mask(allowed)
        state = cache if cache is not None else self.init_cache(b, 0, x.dtype)
        y, xcat = self.conv1d(self.in_proj_qkv(x), state.conv, seg)  # [B, T, C]
        kd = self.hk * self.dk
        q = y[..., :kd].reshape(b, t, self.hk, self.dk)
        k = y[..., kd : 2 * kd].reshape(b, t, self.hk, self.dk)
        v = y[..., 2 * kd :].reshape(b, t, self.hv, self.dv)
        beta = jax.nn.sigmoid(self.in_proj_b(x)).astype(jnp.float32)  # [B, T, HV]
        a = self.in_proj_a(x).astype(jnp.float32) + self.dt_bias[...]
        g = -jnp.exp(self.A_log[...].astype(jnp.float32)) * jax.nn.softplus(a)
        if mask is not None:  # padding: an identity step of the recurrence
            beta, g = (
                jnp.where(mask[..., None], beta, 0.0),
                jnp.where(mask[..., None], g, 0.0),
            )
        rep = self.hv // self.hk  # value head j reads key head j // rep
        q, k = (jnp.repeat(u.astype(jnp.float32), rep, axis=2) for u in (q, k))
        q = l2norm(q) * self.dk**-0.5
        k = l2norm(k)
        args = (q, k, v.astype(jnp.float32), g, beta, state.recurrent)
        if keep_states:
            if cache is None or mask is not None:
                raise ValueError("keep_states needs a cache and unpadded inputs")
            out, states = recurrent_states(*args)
            out = self.norm(out.astype(x.dtype), z=self.in_proj_z(x).reshape(out.shape))
            w = self.kernel - 1  # conv state after i inputs: xcat[i : i + W]
            conv = jnp.stack([xcat[:, i : i + w] for i in range(t + 1)], axis=1)
            return self.out_proj(out.reshape(b, t, -1)), GDNState(
                conv=conv.astype(cache.conv.dtype), recurrent=states
            )
        if cache is not None and t == 1:  # decoding
            out, s = recurrent_gated_delta_rule(*args)
        else:
            out, s = chunk_gated_delta_rule(*args, segment_ids=seg)
        out = self.norm(out.astype(x.dtype), z=self.in_proj_z(x).reshape(out.shape))
        out = self.out_proj(out.reshape(b, t, -1))
        if cache is None:
            return out, None
        conv = conv_state_after(xcat, mask, self.kernel - 1).astype(cache.conv.dtype)
        return out, GDNState(conv=conv, recurrent=s)
