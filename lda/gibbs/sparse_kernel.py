"""The exact sparse collapsed Gibbs sweep (Eq. S.19) compiled for the CPU, parallel over documents.

The conditional splits as (gamma + n_dk^{-j}) beta_kw = n_dk^{-j} beta_kw + gamma beta_kw: a
document-sparse part over the K_d topics the document uses (walked from a compact list) and a
per-word dense part of mass gamma * s_w (s_w = sum_k beta_kw) drawn by binary search in the
word's prefix sums, built once per distinct word of the minibatch. One pre-drawn uniform per
token-sweep picks the part and the topic, so a token costs O(K_d), not O(K), and the results do
not depend on the thread count (the per-thread sums are reduced in a fixed order).

Words are the minibatch's distinct words, numbered 0..W_b-1 ("local" ids); beta arrives as its
(W_b, K) gathered columns, never the whole K x W.
"""

from __future__ import annotations

import numba
import numpy as np

from lda.gibbs.dense import weight_total


@numba.njit(parallel=True, cache=True)
def gather_columns(beta: np.ndarray, ids: np.ndarray, beta_t: np.ndarray, cdf: np.ndarray) -> None:
    """beta_t[i, k] = beta[k, ids[i]] (as float64) and cdf[i] its running sum over k, in tiles
    of 32 sorted ids x 64 topics: each row of beta is read forward over nearby columns and each
    output row written contiguously. Reading scattered columns of a row-major K x W beta is
    memory-bound (at large K and W nearly the cost of the whole transpose): a learner keeping
    beta^T would make this a copy of W_b rows."""
    n_topics = beta.shape[0]
    n = ids.shape[0]
    rows = 32
    width = 64
    for i_b in numba.prange((n + rows - 1) // rows):
        lo = i_b * rows
        hi = min(n, lo + rows)
        tile = np.empty((rows, width), dtype=np.float64)
        running = np.zeros(rows, dtype=np.float64)
        for k0 in range(0, n_topics, width):
            k1 = min(n_topics, k0 + width)
            for k in range(k0, k1):
                row = beta[k]
                for i in range(lo, hi):
                    tile[i - lo, k - k0] = row[ids[i]]
            for i in range(lo, hi):
                r = running[i - lo]
                for k in range(k0, k1):
                    v = tile[i - lo, k - k0]
                    beta_t[i, k] = v
                    r += v
                    cdf[i, k] = r
                running[i - lo] = r


@numba.njit(parallel=True, cache=True)
def running_sums(beta_t: np.ndarray, cdf: np.ndarray) -> None:
    """cdf[i] = the running sum of beta_t[i] over k (the dense part's sampler per word)."""
    for i in numba.prange(beta_t.shape[0]):
        r = 0.0
        for k in range(beta_t.shape[1]):
            r += beta_t[i, k]
            cdf[i, k] = r


@numba.njit(parallel=True, cache=True)
def thread_slots(
    local: np.ndarray,  # (T,) int64 local word ids
    offsets: np.ndarray,  # (n+1,) int64
    schedule: np.ndarray,  # (n,) int64 documents grouped by thread (balanced_schedule)
    bounds: np.ndarray,  # (threads+1,) int64
    n_local: int,  # W_b
) -> tuple[np.ndarray, np.ndarray]:
    """Each thread's own numbering of the words its documents hold, (threads, W_b) with -1 for
    absent words, and where each thread's rows start in the flat accumulator (threads+1): a
    thread sums into (its words x K), not (W_b x K), which stays small with many threads."""
    threads = bounds.shape[0] - 1
    slot = np.full((threads, n_local), -1, dtype=np.int64)
    used = np.zeros(threads, dtype=np.int64)
    for b in numba.prange(threads):
        count = 0
        for i in range(bounds[b], bounds[b + 1]):
            d = schedule[i]
            for j in range(offsets[d], offsets[d + 1]):
                w = local[j]
                if slot[b, w] < 0:
                    slot[b, w] = count
                    count += 1
        used[b] = count
    start = np.zeros(threads + 1, dtype=np.int64)
    for b in range(threads):
        start[b + 1] = start[b] + used[b]
    return slot, start


@numba.njit(cache=True, inline="always")
def _draw_sparse(
    u: float,
    w_old: float,
    k_old: int,
    weights: np.ndarray,
    topics: np.ndarray,
    n: int,
) -> int:
    """The sparse part's inverse CDF at u over the document's list of n topics, the token's
    current topic first (most tokens keep theirs: one comparison), then the others in list
    order; rounding past the end falls back to the last topic with weight."""
    if u < w_old:
        return k_old
    u -= w_old
    running = 0.0
    pick = k_old
    for i in range(n):
        k = topics[i]
        weight = weights[i]
        if k != k_old and weight > 0.0:
            pick = k
            running += weight
            if running > u:
                break
    return pick


# Topics per block of a crowded document's conditional: the draw walks block sums, then one
# block, ~K/32 + 32 steps instead of ~K/2 (K = 1,000: the walk was most of a token's time).
BLOCK = 32


@numba.njit(cache=True, inline="always")
def _block_sums(weights: np.ndarray, blocks: np.ndarray) -> float:
    """blocks[b] = the sum of weights over block b (vectorised within a block); their total."""
    n = weights.shape[0]
    total = 0.0
    for b in range(blocks.shape[0]):
        lo = b * BLOCK
        s = weight_total(weights[lo : min(n, lo + BLOCK)])
        blocks[b] = s
        total += s
    return total


@numba.njit(cache=True, inline="always")
def _draw_blocked(
    u: float, w_old: float, k_old: int, weights: np.ndarray, blocks: np.ndarray
) -> int:
    """:func:`_draw_sparse` in topic order over all K, walking block sums first: the current
    topic first, then the first other topic whose running sum exceeds the rest of u. A block
    whose sum (rounded otherwise than the walk's) crossed without its walk crossing hands its
    running sum on; rounding past the end falls back to the last topic with weight."""
    if u < w_old:
        return k_old
    u -= w_old
    n = weights.shape[0]
    b_old = k_old // BLOCK
    running = 0.0
    for b in range(blocks.shape[0]):
        s = blocks[b] - w_old if b == b_old else blocks[b]
        if running + s <= u:
            running += s
            continue
        lo = b * BLOCK
        for k in range(lo, min(n, lo + BLOCK)):
            weight = weights[k]
            if k != k_old and weight > 0.0:
                running += weight
                if running > u:
                    return k
    for k in range(n - 1, -1, -1):
        if k != k_old and weights[k] > 0.0:
            return k
    return k_old


@numba.njit(cache=True, inline="always")
def _add_scaled(out: np.ndarray, weights: np.ndarray, scale: float) -> None:
    """out += weights * scale (out a row of its own array: no aliasing with weights)."""
    for k in range(out.shape[0]):
        out[k] += weights[k] * scale


@numba.njit(parallel=True, cache=True, fastmath=False)
def sparse_gibbs(
    local: np.ndarray,  # (T,) int64 local word ids
    offsets: np.ndarray,  # (n+1,) int64
    schedule: np.ndarray,  # (n,) int64
    bounds: np.ndarray,  # (threads+1,) int64
    beta_t: np.ndarray,  # (W_b, K) float64: the minibatch's columns of beta, transposed
    dense_cdf: np.ndarray,  # (W_b, K) float64: running sums of the dense part's weights
    dense_scale: float,  # the dense part's weights are dense_scale x dense_cdf's steps
    gamma: np.ndarray,  # (K,) float64 gamma_k
    z: np.ndarray,  # (T,) int64 initial assignments, updated in place
    uniforms: np.ndarray,  # (sweeps, T) float32
    burn_in: int,
    rao_blackwell: bool,
    by_topic_from: int,  # documents using this many topics (or more) are computed over all K
    slot: np.ndarray,  # (threads, W_b) int64 from thread_slots
    slot_start: np.ndarray,  # (threads+1,) int64 from thread_slots
    acc: np.ndarray,  # (slot_start[-1], K) float64 zeros, or (0, K): no word sums wanted
    inv: np.ndarray,  # (slot_start[-1],) float64 zeros: sum of 1/Z by word (Rao-Blackwell)
    document_topic: np.ndarray,  # (n, K) float64 zeros, or (0, K): no document sums wanted
) -> None:
    """All sweeps of every document. Kept sweeps add, per token, the indicator of its new topic
    (or the sparse part of its conditional, n_dk^{-j} beta_kw / Z, and 1/Z for the dense part,
    whose beta_kw factor is applied once per word and document at the end) into the document's
    row and into this thread's rows of ``acc`` (``reduce_by_word`` sums the threads)."""
    n_topics = beta_t.shape[1]
    n_local = beta_t.shape[0]
    sweeps = uniforms.shape[0]
    word_sums = acc.shape[0] > 0
    document_sums = document_topic.shape[0] > 0
    for b in numba.prange(bounds.shape[0] - 1):
        counts = np.zeros(n_topics, dtype=np.float64)
        topics = np.empty(n_topics, dtype=np.int64)  # topics in use, first n_used valid
        where = np.empty(n_topics, dtype=np.int64)  # position of a topic in ``topics``
        weights = np.empty(n_topics, dtype=np.float64)  # sparse weights by list position (or topic)
        blocks = np.empty((n_topics + BLOCK - 1) // BLOCK, dtype=np.float64)  # by topic: their sums
        inv_z = np.zeros(n_local, dtype=np.float64)  # a document's sum of 1/Z by word
        seen = np.empty(n_local, dtype=np.int64)  # the words with inv_z set
        base = slot_start[b]
        for i in range(bounds[b], bounds[b + 1]):
            d = schedule[i]
            start = offsets[d]
            end = offsets[d + 1]
            n_used = 0
            for j in range(start, end):
                k = z[j]
                if counts[k] == 0.0:
                    topics[n_used] = k
                    where[k] = n_used
                    n_used += 1
                counts[k] += 1.0
            n_seen = 0
            for s in range(sweeps):
                keep = s >= burn_in
                for j in range(start, end):
                    w = local[j]
                    row = beta_t[w]
                    k_old = z[j]
                    counts[k_old] -= 1.0
                    if counts[k_old] == 0.0:  # leaves the list: the last entry takes its place
                        last = topics[n_used - 1]
                        topics[where[k_old]] = last
                        where[last] = where[k_old]
                        n_used -= 1
                    # A crowded document (early sweeps from a uniform start) is computed over all
                    # K in topic order: a contiguous loop beats a list walk past ~K/2 topics.
                    by_topic = n_used >= by_topic_from
                    if by_topic:
                        for k in range(n_topics):
                            weights[k] = counts[k] * row[k]
                        sparse = _block_sums(weights, blocks)
                    else:
                        sparse = 0.0
                        for i_k in range(n_used):
                            k = topics[i_k]
                            weight = counts[k] * row[k]
                            weights[i_k] = weight
                            sparse += weight
                    n_sparse = n_used  # the list's first n_sparse entries own weights[]
                    dense = dense_scale * dense_cdf[w, n_topics - 1]
                    total = sparse + dense
                    u = uniforms[s, j] * total
                    k_new = k_old
                    if not total > 0.0:
                        pass  # nothing to draw from (a word beta gives no mass): keep the topic
                    elif u < sparse:
                        w_old = counts[k_old] * row[k_old]
                        if by_topic:
                            k_new = _draw_blocked(u, w_old, k_old, weights, blocks)
                        else:
                            k_new = _draw_sparse(u, w_old, k_old, weights, topics, n_used)
                    else:
                        # The first k whose running sum of gamma_k beta_kw exceeds u - sparse
                        # (symmetric: of beta, past (u - sparse) / gamma), as
                        # torch.searchsorted(right=True); rounding past the end falls back to
                        # the last topic with mass.
                        target = (u - sparse) / dense_scale
                        c_row = dense_cdf[w]
                        lo = 0
                        hi = n_topics - 1
                        while lo < hi:
                            mid = (lo + hi) // 2
                            if c_row[mid] <= target:
                                lo = mid + 1
                            else:
                                hi = mid
                        while lo > 0 and row[lo] == 0.0:
                            lo -= 1
                        k_new = lo
                    if counts[k_new] == 0.0:
                        topics[n_used] = k_new
                        where[k_new] = n_used
                        n_used += 1
                    counts[k_new] += 1.0
                    z[j] = k_new
                    if keep:
                        if not rao_blackwell:
                            if document_sums:
                                document_topic[d, k_new] += 1.0
                            if word_sums:
                                acc[base + slot[b, w], k_new] += 1.0
                        elif total > 0.0:
                            # The sparse part now; the dense part's gamma * beta_kw / Z needs
                            # only 1/Z per word here (beta_kw applied at the document's end).
                            scale = 1.0 / total
                            if by_topic:  # one contiguous loop per sum (each vectorises)
                                if document_sums:
                                    _add_scaled(document_topic[d], weights, scale)
                                if word_sums:
                                    _add_scaled(acc[base + slot[b, w]], weights, scale)
                            for i_k in range(0 if by_topic else n_sparse):
                                k = topics[i_k]
                                p = weights[i_k] * scale
                                if document_sums:
                                    document_topic[d, k] += p
                                if word_sums:
                                    acc[base + slot[b, w], k] += p
                            if inv_z[w] == 0.0:
                                seen[n_seen] = w
                                n_seen += 1
                            inv_z[w] += scale
            for i_w in range(n_seen):  # the dense part of the document's sums, word by word
                w = seen[i_w]
                c = inv_z[w]
                if document_sums:
                    for k in range(n_topics):
                        document_topic[d, k] += gamma[k] * c * beta_t[w, k]
                if word_sums:
                    inv[base + slot[b, w]] += c
                inv_z[w] = 0.0
            for i_k in range(n_used):  # leave counts zero for the next document
                counts[topics[i_k]] = 0.0


@numba.njit(parallel=True, cache=True)
def reduce_by_word(
    slot: np.ndarray,  # (threads, W_b) int64
    slot_start: np.ndarray,  # (threads+1,) int64
    acc: np.ndarray,  # (slot_start[-1], K) float64
    inv: np.ndarray,  # (slot_start[-1],) float64
    beta_t: np.ndarray,  # (W_b, K) float64
    gamma: np.ndarray,  # (K,) float64 gamma_k
    rao_blackwell: bool,
    out: np.ndarray,  # (W_b, K) float64 zeros: kept-sweep sums by word
) -> None:
    """out[w] = the threads' rows of w summed in thread order, plus (Rao-Blackwell) the dense
    part gamma_k * beta_kw * sum 1/Z, applied once per word."""
    threads = slot.shape[0]
    n_topics = out.shape[1]
    for w in numba.prange(out.shape[0]):
        c = 0.0
        for b in range(threads):
            s = slot[b, w]
            if s >= 0:
                r = slot_start[b] + s
                for k in range(n_topics):
                    out[w, k] += acc[r, k]
                c += inv[r]
        if rao_blackwell:
            for k in range(n_topics):
                out[w, k] += gamma[k] * c * beta_t[w, k]


@numba.njit(parallel=True, cache=True)
def scatter_columns(sums_t: np.ndarray, ids: np.ndarray, scale: float, out: np.ndarray) -> None:
    """out[k, ids[i]] = sums_t[i, k] * scale, in tiles of 32 ids x 64 topics (the reverse of
    gather_columns: a column at a time wrote each value to its own cache line)."""
    n_topics = sums_t.shape[1]
    n = ids.shape[0]
    rows = 32
    width = 64
    for k_b in numba.prange((n_topics + width - 1) // width):
        k0 = k_b * width
        k1 = min(n_topics, k0 + width)
        for lo in range(0, n, rows):
            hi = min(n, lo + rows)
            for k in range(k0, k1):
                row = out[k]
                for i in range(lo, hi):
                    row[ids[i]] = sums_t[i, k] * scale
