// The byte copy of ruda's WebGPU driver (ruda_wgpu/byte_copies.py): n bytes from byte
// `start` of `src` to byte `at` of `dst`, where WebGPU's copies, which move whole 4-byte
// words, cannot go. Each unit builds one word of the destination, keeping its bytes outside
// the range. The record `r` holds start, at, n and the workgroups along x (more go along y).

override UNITS: u32;

@group(0) @binding(0) var<uniform> r: vec4<u32>;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(UNITS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = r.y / 4u + (wid.x + wid.y * r.w) * UNITS + lid;
    let end = r.y + r.z;
    if (w >= (end + 3u) / 4u) { return; }
    var word = dst[w];
    for (var b = 0u; b < 4u; b += 1u) {
        let p = w * 4u + b;
        if (p >= r.y && p < end) {
            let q = r.x + (p - r.y);
            let byte = (src[q / 4u] >> (q % 4u * 8u)) & 255u;
            word = (word & ~(255u << (b * 8u))) | (byte << (b * 8u));
        }
    }
    dst[w] = word;
}
