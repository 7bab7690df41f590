"""Prefill and whole requests: a prompt's FLOPs per parameter, and the measured method's output tokens per second of a
replica serving requests that each prefill their prompt, then decode their answer."""

from transforms.estimator.decode import _larger, _overlap, group_scale, pass_seconds
from transforms.presets import Params

FLOPS_PER_PARAM = 2.0  # one multiply-add per parameter per token, used by prefill


def request_tok_s(step, t_prefill, streams, output_tokens, log2_tp, vendor_eff, params: Params, x_prefill=0.0,
                  log2_dp=0.0, t_pass_read=0.0, t_link=0.0):
    """Output tokens per second of one replica serving `streams` requests at a time, each a prefill of its prompt
    (its routed experts' share x_prefill slower by the grouped expert matmuls' efficiency) then `output_tokens`
    decode steps (numbers, polars Series or Exprs alike).

    A prefill is a forward pass of its own (SGLang runs prefill and decode batches apart): it reads the weights its
    prompt uses (t_pass_read: the always-read weights per copy, the experts its tokens touch), overlapped with its
    FLOPs like a decode step's (step_time), and pays a pass's fixed seconds, both shared by the requests that arrive
    together: as each finished request is replaced, about streams / output_tokens arrive per decode step and join one
    prefill pass; fewer than one a step, each gets its own. Its prompt's all-reduces (t_link, at the link's full
    rate) move its tokens' bytes over the link at link_efficiency, added like a decode step's (chunked prefill splits
    the prompt, not the bytes).
    """
    t_prefill = t_prefill + x_prefill * (1 / params.moe_compute_efficiency - 1)
    scale, together = group_scale(log2_tp, vendor_eff, params), _larger(streams / output_tokens, 1.0)
    flops, reads = t_prefill / (params.prefill_mfu * scale), t_pass_read / (params.bandwidth_efficiency * scale * together)
    prefill = (_overlap(flops, reads, params) + pass_seconds(log2_tp, log2_dp, params) / together
               + t_link / params.link_efficiency)
    return streams * output_tokens / (streams * prefill + output_tokens * step)
