"""transformers' GGUF loading of bench/gguf-big.ts's file, for the same job as tensorcast's
`convert big.gguf --to bfloat16 -o OUT.safetensors`: from_pretrained(DIR, gguf_file=, dtype=bfloat16)
then safetensors' save_file of the state dict. Run by gguf-big.ts under /usr/bin/time; it also
checks the values against tensorcast's output, tensor by tensor, where transformers keeps GGUF's
layout (attn_q / attn_k are permuted back by transformers, so they are left out here).

  python bench/gguf-transformers.py DIR NAME.gguf TENSORCAST.safetensors OUT.safetensors
"""
import re
import sys

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

d, name, ours, out = sys.argv[1:5]
m = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.bfloat16)
sd = {k: v.contiguous() for k, v in m.state_dict().items()}
save_file(sd, out)

NAMES = [
    (r"model\.embed_tokens\.weight", "token_embd.weight"),
    (r"lm_head\.weight", "output.weight"),
    (r"model\.norm\.weight", "output_norm.weight"),
    (r"model\.layers\.(\d+)\.input_layernorm\.weight", r"blk.\1.attn_norm.weight"),
    (r"model\.layers\.(\d+)\.post_attention_layernorm\.weight", r"blk.\1.ffn_norm.weight"),
    (r"model\.layers\.(\d+)\.self_attn\.v_proj\.weight", r"blk.\1.attn_v.weight"),
    (r"model\.layers\.(\d+)\.self_attn\.o_proj\.weight", r"blk.\1.attn_output.weight"),
    (r"model\.layers\.(\d+)\.mlp\.gate_proj\.weight", r"blk.\1.ffn_gate.weight"),
    (r"model\.layers\.(\d+)\.mlp\.up_proj\.weight", r"blk.\1.ffn_up.weight"),
    (r"model\.layers\.(\d+)\.mlp\.down_proj\.weight", r"blk.\1.ffn_down.weight"),
]
same = differ = 0
with safe_open(ours, "pt") as f:
    for k, v in sd.items():
        for pat, rep in NAMES:
            if re.fullmatch(pat, k):
                g = re.sub(pat, rep, k)
                if torch.equal(f.get_tensor(g).view(torch.int16), v.view(torch.int16)):
                    same += 1
                else:
                    differ += 1
                    print(f"differs: {k} vs {g}")
print(f"RESULT {len(sd)} tensors; {same} compared bit for bit equal to tensorcast's, {differ} differ")
