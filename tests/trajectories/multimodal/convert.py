#!/usr/bin/env python3
"""Convert public WebVoyager-format browsing trajectories (screenshots as PNG files) to
Anthropic Messages JSON (`{"system", "messages"}`) for `contextfold import --format anthropic`.

Python 3 standard library only. Every input is read with `git show <commit>:<path>` from a
git directory (a bare mirror or a clone), at the pinned commits below:

    python3 convert.py --webvoyager DIR --openwebvoyager DIR [--out DIR]

DIR is the git directory of https://github.com/MinorJerry/WebVoyager resp.
https://github.com/MinorJerry/OpenWebVoyager.

Both repositories store a run as `interact_messages.json` (the OpenAI Chat Completions
`messages` list exactly as the agent last sent it, with every image's base64 replaced by the
literal placeholder `{b64_img}`) next to `screenshot<N>.png`, the file whose bytes the agent
base64-encoded and sent in iteration N (the N-th user message). The conversion:

- `system` message -> top-level `system` string (verbatim);
- user message N, string content -> `[{"type": "text", "text": ...}]` (verbatim; this includes
  WebVoyager's own `Observation: A screenshot and some texts. (Omitted in context.)`, which is
  what the agent itself left in its context for older turns);
- user message N, list content -> its `text` parts verbatim, and each `image_url` part
  (`data:image/png;base64,{b64_img}`) -> an Anthropic `image` block whose `data` is the
  standard padded base64 of the exact bytes of `screenshot<N>.png` (no re-encoding);
- assistant message (a string: `Thought: ... Action: ...`) -> `[{"type": "text", ...}]`.

The agents act through text (`Action: Click [5]`), not tool calling, so there are no
tool_use / tool_result blocks: screenshots appear in user messages, as the agents sent them.
"""

import argparse
import base64
import json
import os
import subprocess
import sys

SOURCES = [
    {
        "slug": "webvoyager",
        "arg": "webvoyager",
        "repo": "https://github.com/MinorJerry/WebVoyager",
        "commit": "5a7896738c10bfb8b9edccce6bb0e0411f8ae569",
        "dir": "results/examples/taskCambridge Dictionary--29",
    },
    {
        "slug": "openwebvoyager",
        "arg": "openwebvoyager",
        "repo": "https://github.com/MinorJerry/OpenWebVoyager",
        "commit": "e907cefcca6f8d9bde742e6dc81882910f6dd4b4",
        "dir": "training/example_dataset_path/stage1_Imitation_Learning/IL_trajectories/"
        "webvoyager_trajectories/taskWebVoyager-Amazon-human-extend--004",
    },
]

PLACEHOLDER = "data:image/png;base64,{b64_img}"
MAX_BYTES = 3 * 1024 * 1024


def git_show(git_dir, commit, path):
    return subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{commit}:{path}"],
        check=True,
        stdout=subprocess.PIPE,
    ).stdout


def media_type(data):
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    raise ValueError("not a PNG or JPEG")


def convert(git_dir, src):
    raw = git_show(git_dir, src["commit"], src["dir"] + "/interact_messages.json")
    source_messages = json.loads(raw)
    system = None
    messages = []
    user_turn = 0
    images = []
    for m in source_messages:
        role, content = m["role"], m["content"]
        if role == "system":
            if system is not None or messages:
                raise ValueError("unexpected system message position")
            system = content
        elif role == "user":
            user_turn += 1
            if isinstance(content, str):
                blocks = [{"type": "text", "text": content}]
            else:
                blocks = []
                for part in content:
                    if part["type"] == "text":
                        blocks.append({"type": "text", "text": part["text"]})
                    elif part["type"] == "image_url":
                        if part["image_url"]["url"] != PLACEHOLDER:
                            raise ValueError("unexpected image_url " + part["image_url"]["url"][:60])
                        name = f"screenshot{user_turn}.png"
                        data = git_show(git_dir, src["commit"], src["dir"] + "/" + name)
                        images.append((name, len(data)))
                        blocks.append(
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": media_type(data),
                                    "data": base64.b64encode(data).decode("ascii"),
                                },
                            }
                        )
                    else:
                        raise ValueError("unexpected part type " + part["type"])
            messages.append({"role": "user", "content": blocks})
        elif role == "assistant":
            if not isinstance(content, str):
                raise ValueError("unexpected assistant content")
            messages.append({"role": "assistant", "content": [{"type": "text", "text": content}]})
        else:
            raise ValueError("unexpected role " + role)
    for a, b in zip(messages, messages[1:]):
        if a["role"] == b["role"]:
            raise ValueError("roles do not alternate")
    out = {"system": system, "messages": messages}
    return out, user_turn, images


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for src in SOURCES:
        ap.add_argument("--" + src["arg"], required=True, metavar="GIT_DIR")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()
    for src in SOURCES:
        out, steps, images = convert(getattr(args, src["arg"]), src)
        text = json.dumps(out, ensure_ascii=False, indent=1) + "\n"
        if len(text.encode("utf-8")) > MAX_BYTES:
            sys.exit(f"{src['slug']}: over 3 MB")
        path = os.path.join(args.out, src["slug"] + ".json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(
            f"{path}: {len(out['messages'])} messages, {steps} agent steps, "
            f"{len(images)} images ({', '.join(f'{n} {s} B' for n, s in images)}), "
            f"{len(text.encode('utf-8'))} bytes"
        )


if __name__ == "__main__":
    main()
