#!/usr/bin/env bash
# The reference's checkout, step for step (TheRock external-builds/pytorch/repo_management.py:
# do_checkout, do_hipify, commit_hipify; therock-inventory F3-F6), one repository after
# another as its five scripts run: torch, audio, vision, triton, apex. Used only as the
# baseline of benches/checkout.sh.
#
#   reference-checkout.sh ORIGINS_DIR ROOT TORCH_REF
set -euo pipefail
origins=$1 root=$2 torch_ref=$3
mkdir -p "$root"

checkout() { # dir url ref jobs
  local dir=$1 url=$2 ref=$3 jobs=$4
  mkdir -p "$dir"
  if [ -d "$dir/.git" ]; then
    git -C "$dir" remote set-url origin "$url"
  else
    git -C "$dir" init -q --initial-branch=main
    git -C "$dir" config advice.detachedHead false
    git -C "$dir" remote add origin "$url"
  fi
  git -C "$dir" -c protocol.file.allow=always fetch -q ${jobs:+-j "$jobs"} --no-recurse-submodules origin "$ref"
  git -C "$dir" checkout -q FETCH_HEAD
  git -C "$dir" -c tag.gpgSign=false tag -f THEROCK_UPSTREAM_DIFFBASE >/dev/null
  git -C "$dir" -c protocol.file.allow=always submodule update -q --init --recursive ${jobs:+-j "$jobs"}
  git -C "$dir" submodule foreach -q --recursive 'git -c tag.gpgSign=false tag -f THEROCK_UPSTREAM_DIFFBASE >/dev/null'
  # submodule.<name>.ignore=all and skip-worktree, per submodule (errors swallowed upstream).
  git -C "$dir" submodule foreach -q --recursive \
    'git -C "$toplevel" config "submodule.$name.ignore" all; git -C "$toplevel" update-index --skip-worktree "$sm_path"' || true
}

hipify() { # dir
  local dir=$1
  if [ -f "$dir/tools/amd_build/build_amd.py" ]; then
    (cd "$dir" && python3 tools/amd_build/build_amd.py >/dev/null)
  fi
  # commit_hipify: the root and every recursive submodule with changes.
  for repo in $( (cd "$dir" && git submodule foreach -q --recursive 'echo "$displaypath"') ) .; do
    if [ -n "$(git -C "$dir/$repo" status --porcelain -u --ignore-submodules)" ]; then
      git -C "$dir/$repo" add -A
      git -C "$dir/$repo" -c user.name=therockbot -c user.email=therockbot@example.com \
        commit -q --no-gpg-sign -m "DO NOT SUBMIT: HIPIFY"
      git -C "$dir/$repo" -c tag.gpgSign=false tag -f THEROCK_HIPIFY_DIFFBASE >/dev/null
    fi
  done
}

pin() { # project key -> "commit origin" from torch's related_commits (os ubuntu)
  awk -F'|' -v key="$1" '$1 == "ubuntu" && $3 == key { print $5 " " $6; exit }' "$root/pytorch/related_commits"
}

checkout "$root/pytorch" "file://$origins/pytorch.git" "$torch_ref" 10
hipify "$root/pytorch"
for project in "pytorch_audio torchaudio" "pytorch_vision torchvision"; do
  set -- $project
  read -r commit url < <(pin "$2")
  checkout "$root/$1" "$url" "$commit" ""
  hipify "$root/$1"
done
checkout "$root/triton" "file://$origins/triton.git" "$(cat "$root/pytorch/.ci/docker/ci_commit_pins/triton.txt")" ""
echo '{"TRITON_WHEEL_VERSION_SUFFIX": ""}' > "$root/triton/build_env.json"
read -r commit url < <(pin apex)
checkout "$root/apex" "$url" "$commit" ""
