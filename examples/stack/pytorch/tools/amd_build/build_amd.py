#!/usr/bin/env python3
"""Hipify the sample torch tree: the shape of PyTorch's tools/amd_build/build_amd.py.

Run from the repository root (as ROCm CI and TheRock do): the submodule pre-pass uses paths
relative to the current directory, so running it from elsewhere silently skips those edits,
exactly like upstream.

Like upstream, running it twice is not the same as running it once (pytorch#160579):
torch/ files are rewritten in place and `hip/driver_types.h` becomes `hip/hip/driver_types.h`.
"""

import argparse
import os
import sys

sys.path.append(
    os.path.realpath(os.path.join(os.path.dirname(__file__), os.path.pardir, os.path.pardir, "torch", "utils"))
)

from hipify import hipify_python  # noqa: E402

parser = argparse.ArgumentParser(description="Top-level script for HIPifying, filling in most common parameters")
parser.add_argument(
    "--out-of-place-only", action="store_true", help="Whether to only run hipify out-of-place on source files"
)
parser.add_argument("--project-directory", type=str, default="", help="The root of the project.", required=False)
parser.add_argument(
    "--output-directory", type=str, default="", help="The directory to store the hipified project", required=False
)
parser.add_argument(
    "--extra-include-dir",
    type=str,
    default=[],
    nargs="+",
    help="The list of extra directories in caffe2 to hipify",
    required=False,
)
args = parser.parse_args()

amd_build_dir = os.path.dirname(os.path.realpath(__file__))
proj_dir = os.path.join(os.path.dirname(os.path.dirname(amd_build_dir)))

if args.project_directory:
    proj_dir = args.project_directory

out_dir = proj_dir
if args.output_directory:
    out_dir = args.output_directory

includes = [
    "c10/cuda/*",
    "aten/src/ATen/cuda/*",
    "aten/src/ATen/native/cuda/*",
    "torch/*",
]
for new_dir in args.extra_include_dir:
    abs_new_dir = os.path.join(proj_dir, new_dir)
    if os.path.exists(abs_new_dir):
        includes.append(os.path.join(new_dir, "**/*"))

ignores = [
    # Earlier outputs are never read again.
    "*/hip/*",
    "aten/src/ATen/core/*",
    "torch/lib/tmp_install/*",
    "torch/include/*",
]

# Files in submodules that need the HIP platform macro renamed (upstream: fbgemm, gloo,
# kineto, tensorpipe). Paths relative to the current directory, as upstream.
hip_platform_files = [
    "third_party/kineto/libkineto/CMakeLists.txt",
    "third_party/kineto/libkineto/src/RoctracerActivity.h",
]
for hip_platform_file in hip_platform_files:
    if os.path.exists(hip_platform_file):
        with open(hip_platform_file) as sources:
            lines = sources.readlines()
        newlines = [line.replace("HIP_PLATFORM_HCC", "HIP_PLATFORM_AMD") for line in lines]
        newlines = [line.replace("HIP_HCC_FLAGS", "HIP_CLANG_FLAGS") for line in newlines]
        if lines != newlines:
            print(f"{hip_platform_file} updated")
            with open(hip_platform_file, "w") as sources:
                sources.writelines(newlines)

hipify_python.hipify(
    project_directory=proj_dir,
    output_directory=out_dir,
    includes=[os.path.join(proj_dir, include) for include in includes],
    ignores=[os.path.join(proj_dir, ignore) for ignore in ignores],
    out_of_place_only=args.out_of_place_only,
    hip_clang_launch=True,
)
