"""Writes src/ggml/grid-data.ts: the index lists of ggml's IQ codebooks, compressed.

ggml publishes each IQ grid twice: as the index list its quantizer starts from (kgrid_* in
ggml-quants.c: grid point k packs one level index per element, 2 bits for the IQ2 / IQ1 grids and
3 bits for the IQ3 ones) and as the expanded tables its decoders read (iq2xxs_grid ... in
ggml-common.h). src/ggml/grids.ts expands the index lists by the level rule; this script checks
that the rule reproduces every expanded table before it writes anything, so the rule and the data
are proven together. The lists are ascending, stored as LEB128 deltas in base64.

Usage: python scripts/ggml-grid-data.py GGML_QUANTS_C GGML_COMMON_H > src/ggml/grid-data.ts
"""
import base64, re, sys

quants, common = open(sys.argv[1]).read(), open(sys.argv[2]).read()

def table(text, name):
    m = re.search(r"%s\[[^\]]*\]\s*=\s*\{(.*?)\};" % name, text, re.S) or \
        re.search(r"GGML_TABLE_BEGIN\([^,]+,\s*%s,[^)]*\)(.*?)GGML_TABLE_END" % name, text, re.S)
    return [int(x, 0) for x in re.findall(r"0x[0-9a-fA-F]+|\d+", re.sub(r"//.*", "", m.group(1)))]

# name in grid-data.ts, index list, expanded table, bits per level, elements, level values (bytes)
GRIDS = [
    ("IQ2XXS", "kgrid_2bit_256", "iq2xxs_grid", 2, 8, [8, 25, 43]),
    ("IQ2XS", "kgrid_2bit_512", "iq2xs_grid", 2, 8, [8, 25, 43]),
    ("IQ2S", "kgrid_2bit_1024", "iq2s_grid", 2, 8, [8, 25, 43]),
    ("IQ3XXS", "kgrid_256", "iq3xxs_grid", 3, 4, [4, 12, 20, 28, 36, 44, 52, 62]),
    ("IQ3S", "kgrid_512", "iq3s_grid", 3, 4, [1, 3, 5, 7, 9, 11, 13, 15]),
    ("IQ1S", "kgrid_1bit_2048", "iq1s_grid", 2, 8, [0xFF, 0, 1]),
]

out = ["/**", " * The index lists of ggml's IQ codebooks (kgrid_* in ggml-quants.c), ascending, as LEB128 deltas in",
       " * base64. Written by scripts/ggml-grid-data.py, which first checks that grids.ts's level rule expands",
       " * each list into the table ggml's decoders read (ggml-common.h). Do not edit by hand.", " */"]
for name, kname, gname, bits, n, levels in GRIDS:
    k, g = table(quants, kname), table(common, gname)
    assert len(k) == len(g), name
    assert all(a < b for a, b in zip(k, k[1:])), f"{name} is not ascending"
    for idx, word in zip(k, g):
        expanded = sum(levels[(idx >> (bits * i)) & ((1 << bits) - 1)] << (8 * i) for i in range(n))
        assert expanded == word, f"{name}: the level rule does not give ggml's table"
    data, prev = bytearray(), 0
    for v in k:
        d, prev = v - prev, v
        while True:
            b = d & 0x7F; d >>= 7
            data.append(b | (0x80 if d else 0))
            if not d: break
    out.append(f"/** {kname}: {len(k)} points. */")
    out.append(f'export const {name} = "{base64.b64encode(bytes(data)).decode()}";')
print("\n".join(out))
