#!/usr/bin/env python3
"""Convert public agent trajectories into contextfold RuntimeEvent JSON Lines.

Python 3 standard library only. Every source is read straight out of a git
snapshot of its repository at a pinned commit (`git --git-dir DIR show
COMMIT:PATH`), so the output is reproducible:

    python3 tests/trajectories/convert.py \
        --swe-agent  /path/to/SWE-agent.git \
        --openhands  /path/to/OpenHands.git \
        --moatless   /path/to/moatless-tools.git \
        --mini-swe-agent /path/to/mini-swe-agent.git

Omit a flag to skip that source. See tests/trajectories/README.md for what
each source is and how its records map onto events (docs/events.md).

Conversion rules (the same for every source):
- the system prompt, if any, becomes `system_note`; the user task becomes
  `user_text`; both are in turn 1;
- every model step is in the same turn (`turn-1`) and has one `responseId`;
  its text/thought is `assistant_text`, each action a `tool_call`, and each
  observation a `tool_result` with the same `callId`;
- call ids are the source's own (reused ids are kept as they are); a source
  without ids gets `call-<step>`;
- outputs are verbatim, never truncated; runId `run-1`, seq from 1,
  runtimeEventId `evt-<seq>`.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------- sources

SWE_AGENT_COMMIT = "3ea751c087f32b16e039a2233dd6eefecef325d5"
SWE_AGENT_FILES = [
    # (output name, path in the repository)
    ("pydicom-1458", "tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj"),
    ("ctf-web-i-got-id", "trajectories/demonstrations/ctf/web/i_got_id_demo.traj"),
    ("ctf-crypto-katy", "trajectories/demonstrations/ctf/crypto/katy.traj"),
    ("ctf-crypto-baby-encryption", "trajectories/demonstrations/ctf/crypto/BabyEncryption.traj"),
    ("ctf-rev-rock", "trajectories/demonstrations/ctf/rev/rock.traj"),
    ("ctf-crypto-eps", "trajectories/demonstrations/ctf/crypto/eps.traj"),
    ("ctf-pwn-warmup", "trajectories/demonstrations/ctf/pwn/warmup.traj"),
    ("marshmallow-1867-function-calling", "trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling_replace__install-1/marshmallow-code__marshmallow-1867.traj"),
    ("marshmallow-1867-default", "trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__default__t-0.20__p-0.95__c-2.00__install-1___install_from_source/marshmallow-code__marshmallow-1867.traj"),
]

# the trajectory also kept as Chat Completions messages (it reuses call ids)
SWE_AGENT_NATIVE = "marshmallow-1867-function-calling"

OPENHANDS_COMMIT = "156d0686c46aafb0fa9d291da6421fb6f64dddc0"
OPENHANDS_FILE = "evaluation/benchmarks/multi_swe_bench/examples/output.jsonl"

MOATLESS_COMMIT = "91f874186e8298e5270c00a334c7a962bb4cdfad"
MOATLESS_DIR = "evaluations/20241117_moatless_claude_3_5_sonnet_20241022"
MOATLESS_INSTANCES = [
    "django__django-12747",
    "django__django-15819",
    "sympy__sympy-20590",
    "pytest-dev__pytest-5227",
    "sphinx-doc__sphinx-10325",
]
# the instance also kept in its native Anthropic Messages form
MOATLESS_NATIVE = "django__django-15819"

MINI_COMMIT = "e5e0fbca1c60561bde25fa473b78717aa4b3f9ec"  # refs/pull/816/head
MINI_FILES = [
    ("sqlfluff-1733-deepseek-reasoner", "output/deepseek_reasoner_dev/sqlfluff__sqlfluff-1733/sqlfluff__sqlfluff-1733.traj.json"),
    ("astroid-1333-deepseek-chat", "output/deepseek_chat_dev/pylint-dev__astroid-1333/pylint-dev__astroid-1333.traj.json"),
    ("pvlib-1072-deepseek-chat", "output/deepseek_chat_dev/pvlib__pvlib-python-1072/pvlib__pvlib-python-1072.traj.json"),
]
MINI_NATIVE = "pvlib-1072-deepseek-chat"


def git_show(git_dir, commit, path):
    return subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8")


# ---------------------------------------------------------------- writer


class Log:
    """Accumulates events of one session with seq/ids assigned in order."""

    def __init__(self, session_id):
        self.session_id = session_id
        self.events = []

    def add(self, content, response_id=None, created_at_ms=None, metadata=None):
        seq = len(self.events) + 1
        event = {
            "sessionId": self.session_id,
            "runId": "run-1",
            "turnId": "turn-1",
            "runtimeEventId": f"evt-{seq}",
            "seq": seq,
        }
        if created_at_ms is not None:
            event["createdAtMs"] = created_at_ms
        if response_id is not None:
            event["responseId"] = response_id
        event["content"] = content
        if metadata:
            event["metadata"] = metadata
        self.events.append(event)

    def system_note(self, text, **kw):
        self.add({"type": "system_note", "text": text}, **kw)

    def user_text(self, text, **kw):
        self.add({"type": "user_text", "text": text}, **kw)

    def assistant_text(self, text, **kw):
        self.add({"type": "assistant_text", "text": text}, **kw)

    def tool_call(self, call_id, name, input_, **kw):
        self.add({"type": "tool_call", "callId": call_id, "toolName": name, "input": input_}, **kw)

    def tool_result(self, call_id, name, output, is_error=False, **kw):
        content = {"type": "tool_result", "callId": call_id, "toolName": name, "output": output}
        if is_error:
            content["isError"] = True
        self.add(content, **kw)

    def runtime_note(self, code, text, **kw):
        self.add({"type": "runtime_note", "code": code, "text": text}, **kw)

    def write(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            for e in self.events:
                f.write(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n")
        print(f"wrote {os.path.relpath(path, HERE)}: {len(self.events)} events", file=sys.stderr)


def parse_args_json(text):
    """Tool-call arguments as JSON when they parse, else the raw string."""
    if isinstance(text, (dict, list)):
        return text
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


# ---------------------------------------------------------------- SWE-agent


def convert_swe_agent(git_dir):
    for name, path in SWE_AGENT_FILES:
        traj = json.loads(git_show(git_dir, SWE_AGENT_COMMIT, path))
        history = traj["history"]
        steps = traj["trajectory"]
        log = Log(f"swe-agent-{name}")
        i = 0
        # Everything before the first assistant message: system prompt, task
        # (and, in demonstration-style configs, any further user preamble).
        while i < len(history) and history[i]["role"] != "assistant":
            m = history[i]
            if m["role"] == "system":
                log.system_note(m["content"])
            else:
                log.user_text(m["content"])
            i += 1
        step = 0
        while i < len(history):
            m = history[i]
            if m["role"] != "assistant":
                # A second observation in a row (not seen in these files).
                raise SystemExit(f"{name}: unexpected {m['role']} message at {i}")
            step += 1
            rid = f"{name}-step-{step}"
            thought = m.get("thought", m.get("content", ""))
            if thought:
                log.assistant_text(thought, response_id=rid)
            calls = []
            if m.get("tool_calls"):
                for tc in m["tool_calls"]:
                    fn = tc["function"]
                    calls.append((tc["id"], fn["name"], parse_args_json(fn["arguments"])))
            else:
                action = m.get("action", "")
                tool = action.strip().split(None, 1)[0] if action.strip() else "bash"
                calls.append((f"call-{step}", tool, {"command": action}))
            for cid, tool, inp in calls:
                log.tool_call(cid, tool, inp, response_id=rid)
            # The observation: the next history message(s) up to the next
            # assistant message; the last step's observation is only in
            # `trajectory` (SWE-agent does not append it to the history).
            i += 1
            obs_msgs = []
            while i < len(history) and history[i]["role"] != "assistant":
                obs_msgs.append(history[i])
                i += 1
            if obs_msgs:
                if len(obs_msgs) != 1:
                    raise SystemExit(f"{name}: {len(obs_msgs)} observation messages after step {step}")
                obs = obs_msgs[0]["content"]
            elif step - 1 < len(steps) and steps[step - 1].get("observation") is not None:
                obs = steps[step - 1]["observation"]
            else:
                obs = None
            if obs is not None:
                for cid, tool, _ in calls:
                    log.tool_result(cid, tool, obs)
        log.write(os.path.join(HERE, "swe-agent", f"{name}.jsonl"))
        if name == SWE_AGENT_NATIVE:
            # SWE-agent's history is Chat Completions messages plus its own
            # keys (message_type, agent, thought, action, tool_call_ids); keep
            # the chat fields only: role, content, tool_calls, tool_call_id.
            chat = []
            for m in history:
                o = {"role": m["role"], "content": m["content"]}
                if m.get("tool_calls"):
                    o["tool_calls"] = m["tool_calls"]
                if m["role"] == "tool":
                    (o["tool_call_id"],) = m["tool_call_ids"]
                chat.append(o)
            out = os.path.join(HERE, "swe-agent", "native", f"{name}.openai-chat.json")
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "w", encoding="utf-8") as f:
                json.dump({"messages": chat}, f, ensure_ascii=False, indent=1)
                f.write("\n")
            print(f"wrote {os.path.relpath(out, HERE)}", file=sys.stderr)


# ---------------------------------------------------------------- OpenHands


def iso_ms(ts):
    dt = datetime.datetime.fromisoformat(ts)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    return int(dt.timestamp() * 1000)


def convert_openhands(git_dir):
    text = git_show(git_dir, OPENHANDS_COMMIT, OPENHANDS_FILE)
    for line in text.splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        name = rec["instance_id"]
        log = Log(f"openhands-{name}")
        seen_responses = set()
        pending = {}  # event id -> (call id, tool name) of an action awaiting its observation
        for e in rec["history"]:
            ts = iso_ms(e["timestamp"]) if e.get("timestamp") else None
            action = e.get("action")
            obs = e.get("observation")
            tcm = e.get("tool_call_metadata")
            if action == "system":
                log.system_note(e["args"]["content"], created_at_ms=ts)
            elif action == "message" and e.get("source") == "user":
                log.user_text(e["args"]["content"], created_at_ms=ts)
            elif action == "recall":
                # The runtime's workspace-context lookup, not a model step.
                pending[e["id"]] = None
            elif obs == "recall":
                log.runtime_note("openhands_recall", e["content"], created_at_ms=ts,
                                 metadata={"openhandsObservation": "recall"})
            elif action is not None and e.get("source") == "agent":
                if tcm is None:
                    # An agent message without a tool call (not in these files).
                    log.assistant_text(e["message"], created_at_ms=ts)
                    continue
                resp = tcm["model_response"]
                rid = resp["id"]
                msg = resp["choices"][0]["message"]
                if rid not in seen_responses:
                    seen_responses.add(rid)
                    if msg.get("content"):
                        log.assistant_text(msg["content"], response_id=rid, created_at_ms=ts)
                cid = tcm["tool_call_id"]
                args = None
                for tc in msg.get("tool_calls") or []:
                    if tc["id"] == cid:
                        args = parse_args_json(tc["function"]["arguments"])
                if args is None:
                    args = e.get("args")
                log.tool_call(cid, tcm["function_name"], args, response_id=rid, created_at_ms=ts)
                pending[e["id"]] = (cid, tcm["function_name"])
            elif obs is not None:
                cause = e.get("cause")
                if tcm is not None:
                    cid, tool = tcm["tool_call_id"], tcm["function_name"]
                elif pending.get(cause):
                    cid, tool = pending[cause]
                elif obs == "error" and cause is None:
                    # The runtime rejected a malformed tool call before it became
                    # an action, so the history has no call to answer; the error
                    # text is what the model was shown next.
                    log.runtime_note("openhands_error_observation", e["content"], created_at_ms=ts,
                                     metadata={"openhandsObservation": "error"})
                    continue
                else:
                    raise SystemExit(f"{name}: observation {e['id']} without a call")
                log.tool_result(cid, tool, e["content"], is_error=(obs == "error"), created_at_ms=ts)
            else:
                raise SystemExit(f"{name}: unhandled event {e.get('id')}")
        log.write(os.path.join(HERE, "openhands", f"{name}.jsonl"))


# ---------------------------------------------------------------- moatless


def anthropic_result_text(content):
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] for b in content if b.get("type") == "text")


def convert_moatless(git_dir):
    for inst in MOATLESS_INSTANCES:
        traj = json.loads(git_show(git_dir, MOATLESS_COMMIT, f"{MOATLESS_DIR}/{inst}/trajectory.json"))
        system = traj["agent"]["system_prompt"]
        last = traj["nodes"][-1]
        build = last["completions"]["build_action"]
        response = build["response"]
        messages = list(build["input"]) + [{"role": "assistant", "content": response["content"]}]
        log = Log(f"moatless-{inst}")
        log.system_note(system)
        names = {}
        step = 0
        for idx, m in enumerate(messages):
            if m["role"] == "user":
                blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
                for b in blocks:
                    if b["type"] == "tool_result":
                        cid = b["tool_use_id"]
                        log.tool_result(cid, names[cid], anthropic_result_text(b["content"]),
                                        is_error=bool(b.get("is_error")))
                    elif b["type"] == "text":
                        if idx == 0:
                            log.user_text(b["text"])
                        else:
                            # Text the agent framework put in a user message mid-loop.
                            log.system_note(b["text"], metadata={"sourceRole": "user"})
                    else:
                        raise SystemExit(f"{inst}: unhandled user block {b['type']}")
            else:
                step += 1
                rid = response["id"] if idx == len(messages) - 1 else f"{inst}-step-{step}"
                blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
                for b in blocks:
                    if b["type"] == "text":
                        log.assistant_text(b["text"], response_id=rid)
                    elif b["type"] == "tool_use":
                        names[b["id"]] = b["name"]
                        log.tool_call(b["id"], b["name"], b["input"], response_id=rid)
                    else:
                        raise SystemExit(f"{inst}: unhandled assistant block {b['type']}")
        # The final step's observation is in the last node, not in any input.
        final_calls = [b for b in response["content"] if b["type"] == "tool_use"]
        if last.get("observation") and final_calls:
            for b in final_calls:
                log.tool_result(b["id"], b["name"], last["observation"]["message"])
        log.write(os.path.join(HERE, "moatless", f"{inst}.jsonl"))
        if inst == MOATLESS_NATIVE:
            native = {
                "model": build["model"],
                "max_tokens": traj["agent"]["completion"]["max_tokens"],
                "system": system,
                "messages": messages,
            }
            path = os.path.join(HERE, "moatless", "native", f"{inst}.anthropic.json")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                json.dump(native, f, ensure_ascii=False, indent=1)
                f.write("\n")
            print(f"wrote {os.path.relpath(path, HERE)}", file=sys.stderr)


# ---------------------------------------------------------------- mini-swe-agent


def returncode(output):
    m = re.match(r"\s*<returncode>(-?\d+)</returncode>", output or "")
    return int(m.group(1)) if m else None


def convert_mini(git_dir):
    for name, path in MINI_FILES:
        traj = json.loads(git_show(git_dir, MINI_COMMIT, path))
        msgs = traj["messages"]
        log = Log(f"mini-swe-agent-{name}")
        names = {}
        seen_user = False
        for m in msgs:
            role = m["role"]
            if role == "system":
                log.system_note(m["content"])
            elif role == "user":
                if not seen_user:
                    log.user_text(m["content"])
                    seen_user = True
                else:
                    log.system_note(m["content"], metadata={"sourceRole": "user"})
            elif role == "assistant":
                resp = (m.get("extra") or {}).get("response") or {}
                rid = resp.get("id")
                ts = resp["created"] * 1000 if resp.get("created") else None
                if m.get("content"):
                    log.assistant_text(m["content"], response_id=rid, created_at_ms=ts)
                for tc in m.get("tool_calls") or []:
                    names[tc["id"]] = tc["function"]["name"]
                    log.tool_call(tc["id"], tc["function"]["name"], parse_args_json(tc["function"]["arguments"]),
                                  response_id=rid, created_at_ms=ts)
            elif role == "tool":
                cid = m["tool_call_id"]
                log.tool_result(cid, names[cid], m["content"])
            elif role == "exit":
                # mini-swe-agent's own record of the submission; never sent to the model.
                log.runtime_note("mini_swe_agent_exit", m["content"],
                                 metadata={"exitStatus": traj["info"].get("exit_status")})
            else:
                raise SystemExit(f"{name}: unhandled role {role}")
        log.write(os.path.join(HERE, "mini-swe-agent", f"{name}.jsonl"))
        if name == MINI_NATIVE:
            # Chat Completions messages as sent: mini-swe-agent's `extra`
            # bookkeeping (the raw provider response) and its final `exit`
            # record are not part of the request and are left out.
            chat = []
            for m in msgs:
                if m["role"] == "exit":
                    continue
                chat.append({k: v for k, v in m.items() if k != "extra"})
            out = os.path.join(HERE, "mini-swe-agent", "native", f"{name}.openai-chat.json")
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "w", encoding="utf-8") as f:
                json.dump({"messages": chat}, f, ensure_ascii=False, indent=1)
                f.write("\n")
            print(f"wrote {os.path.relpath(out, HERE)}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--swe-agent", help="git dir of SWE-agent/SWE-agent")
    p.add_argument("--openhands", help="git dir of All-Hands-AI/OpenHands")
    p.add_argument("--moatless", help="git dir of aorwall/moatless-tools")
    p.add_argument("--mini-swe-agent", help="git dir of SWE-agent/mini-swe-agent (with refs/pull/816/head)")
    a = p.parse_args()
    if a.swe_agent:
        convert_swe_agent(a.swe_agent)
    if a.openhands:
        convert_openhands(a.openhands)
    if a.moatless:
        convert_moatless(a.moatless)
    if a.mini_swe_agent:
        convert_mini(a.mini_swe_agent)


if __name__ == "__main__":
    main()
