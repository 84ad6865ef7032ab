"""Launch cost on a WebGPU device: ruda's launch next to a raw wgpu-py dispatch, in one run.

Both sides run the same one-line WGSL-sized work (``y[i] = y[i] + a * x[i]`` over 1 024
elements, 4 cubes of 256 units). The raw side is wgpu-py written the plain way: per dispatch
its own command encoder, compute pass, bind group offset and ``queue.submit``. The ruda side
is ``kernel.launch`` (records written into the stream's arena, dispatches sharing one compute
pass, one submission per flush). Reported per launch: the host time of the calls, and the
time until the device has finished all of them (a buffer mapping on both sides).

    python benchmarks/wgpu_launch.py [--device webgpu:0] [--launches 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import wgpu

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, f32, kernel

_WGSL = """
@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < P[1]) { y[i] = y[i] + bitcast<f32>(P[0]) * x[i]; }
}
"""


@kernel
def bench_axpy(x: Array[f32], y: Array[f32], a: f32):
    i = ABSOLUTE_POS
    if i < y.len():
        y[i] = y[i] + a * x[i]


def _ruda(device: str, n: int, launches: int) -> tuple[float, float]:
    client = ruda.client(device)
    x = ruda.asarray(np.ones(n, np.float32), client)
    y = ruda.asarray(np.zeros(n, np.float32), client)
    bench_axpy.launch(client, n // 256, 256, x, y, 1.0)
    client.sync().result()
    start = time.perf_counter()
    for _ in range(launches):
        bench_axpy.launch(client, n // 256, 256, x, y, 1.0)
    issued = time.perf_counter()
    client.sync().result()
    done = time.perf_counter()
    return (issued - start) / launches, (done - start) / launches


def _raw(n: int, launches: int) -> tuple[float, float]:
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    device = adapter.request_device_sync()
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
    x = device.create_buffer_with_data(data=np.ones(n, np.float32), usage=usage)
    y = device.create_buffer_with_data(data=np.zeros(n, np.float32), usage=usage)
    params = device.create_buffer_with_data(
        data=np.array([np.float32(1.0).view(np.uint32), n], np.uint32), usage=usage
    )
    pipeline = device.create_compute_pipeline(
        layout="auto", compute={"module": device.create_shader_module(code=_WGSL)}
    )
    group = device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0),
        entries=[
            {"binding": k, "resource": {"buffer": b, "offset": 0, "size": b.size}}
            for k, b in enumerate((params, x, y))
        ],
    )

    def dispatch() -> None:
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(n // 256)
        compute.end()
        device.queue.submit([encoder.finish()])

    dispatch()
    device.queue.read_buffer(y)
    start = time.perf_counter()
    for _ in range(launches):
        dispatch()
    issued = time.perf_counter()
    device.queue.read_buffer(y)  # maps a copy: done when every dispatch before it is
    done = time.perf_counter()
    return (issued - start) / launches, (done - start) / launches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="webgpu:0")
    parser.add_argument("--launches", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n = 1024
    rows = {"ruda": [], "raw wgpu-py": []}  # type: dict[str, list[tuple[float, float]]]
    for _ in range(args.repeats):
        rows["ruda"].append(_ruda(args.device, n, args.launches))
        rows["raw wgpu-py"].append(_raw(n, args.launches))
    medians = {}
    print(
        f"{args.launches} launches of a 1 024-element axpy on {args.device}, median of "
        f"{args.repeats} runs (µs per launch)"
    )
    print(f"{'':14s} {'host calls':>11s} {'until done':>11s}")
    for name, samples in rows.items():
        host = statistics.median(s[0] for s in samples) * 1e6
        total = statistics.median(s[1] for s in samples) * 1e6
        medians[name] = (host, total)
        print(f"{name:14s} {host:11.1f} {total:11.1f}")
    ratio_host = medians["ruda"][0] / medians["raw wgpu-py"][0]
    ratio_total = medians["ruda"][1] / medians["raw wgpu-py"][1]
    print(f"ruda / raw: {ratio_host:.2f}x host, {ratio_total:.2f}x until done")


if __name__ == "__main__":
    main()
