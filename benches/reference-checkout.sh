#!/usr/bin/env bash
# The reference's checkout, step for step (TheRock external-builds/pytorch/repo_management.py:
# do_checkout, do_hipify, commit_hipify; therock-inventory F3-F6), one repository after
# another as its five scripts run: torch, audio, vision, triton, apex. Used only as the
# baseline of benches/checkout.sh and benches/torch-scale/bench.sh.
#
#   reference-checkout.sh ORIGINS_DIR ROOT TORCH_REF
#
# With REFERENCE_TIMINGS=FILE, each step appends `project phase start end` (seconds since the
# epoch) to FILE; phases: fetch, checkout, submodules, hipify, commits, tags.
set -euo pipefail
origins=$1 root=$2 torch_ref=$3
timings=${REFERENCE_TIMINGS:-}
mkdir -p "$root"

step() { # project phase command...: runs the command, timed when REFERENCE_TIMINGS is set
  local project=$1 phase=$2 start=$EPOCHREALTIME
  shift 2
  "$@"
  if [ -n "$timings" ]; then echo "$project $phase $start $EPOCHREALTIME" >> "$timings"; fi
}

checkout() { # project dir url ref jobs
  local project=$1 dir=$2 url=$3 ref=$4 jobs=$5
  mkdir -p "$dir"
  if [ -d "$dir/.git" ]; then
    step "$project" fetch git -C "$dir" remote set-url origin "$url"
  else
    step "$project" fetch git -C "$dir" init -q --initial-branch=main
    step "$project" fetch git -C "$dir" config advice.detachedHead false
    step "$project" fetch git -C "$dir" remote add origin "$url"
  fi
  step "$project" fetch git -C "$dir" -c protocol.file.allow=always fetch -q ${jobs:+-j "$jobs"} --no-recurse-submodules origin "$ref"
  step "$project" checkout git -C "$dir" checkout -q FETCH_HEAD
  step "$project" tags git -C "$dir" -c tag.gpgSign=false tag -f THEROCK_UPSTREAM_DIFFBASE >/dev/null
  step "$project" submodules git -C "$dir" -c protocol.file.allow=always submodule update -q --init --recursive ${jobs:+-j "$jobs"}
  step "$project" tags git -C "$dir" submodule foreach -q --recursive 'git -c tag.gpgSign=false tag -f THEROCK_UPSTREAM_DIFFBASE >/dev/null'
  # submodule.<name>.ignore=all and skip-worktree, per submodule (errors swallowed upstream).
  step "$project" submodules git -C "$dir" submodule foreach -q --recursive \
    'git -C "$toplevel" config "submodule.$name.ignore" all; git -C "$toplevel" update-index --skip-worktree "$sm_path"' || true
}

commit_hipify() { # repo: commit and tag it when hipify changed it
  local repo=$1
  if [ -n "$(git -C "$repo" status --porcelain -u --ignore-submodules)" ]; then
    git -C "$repo" add -A
    git -C "$repo" -c user.name=therockbot -c user.email=therockbot@example.com \
      commit -q --no-gpg-sign -m "DO NOT SUBMIT: HIPIFY"
    git -C "$repo" -c tag.gpgSign=false tag -f THEROCK_HIPIFY_DIFFBASE >/dev/null
  fi
}

hipify() { # project dir
  local project=$1 dir=$2
  if [ -f "$dir/tools/amd_build/build_amd.py" ]; then
    step "$project" hipify sh -c 'cd "$1" && python3 tools/amd_build/build_amd.py >/dev/null' sh "$dir"
  fi
  # commit_hipify: the root and every recursive submodule with changes.
  for repo in $( (cd "$dir" && git submodule foreach -q --recursive 'echo "$displaypath"') ) .; do
    step "$project" commits commit_hipify "$dir/$repo"
  done
}

pin() { # project key -> "commit origin" from torch's related_commits (os ubuntu)
  awk -F'|' -v key="$1" '$1 == "ubuntu" && $3 == key { print $5 " " $6; exit }' "$root/pytorch/related_commits"
}

checkout torch "$root/pytorch" "file://$origins/pytorch.git" "$torch_ref" 10
hipify torch "$root/pytorch"
for project in "audio pytorch_audio torchaudio" "vision pytorch_vision torchvision"; do
  set -- $project
  read -r commit url < <(pin "$3")
  checkout "$1" "$root/$2" "$url" "$commit" ""
  hipify "$1" "$root/$2"
done
checkout triton "$root/triton" "file://$origins/triton.git" "$(cat "$root/pytorch/.ci/docker/ci_commit_pins/triton.txt")" ""
echo '{"TRITON_WHEEL_VERSION_SUFFIX": ""}' > "$root/triton/build_env.json"
read -r commit url < <(pin apex)
checkout apex "$root/apex" "$url" "$commit" ""
