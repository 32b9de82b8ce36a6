"""The client-compatibility suite in Python: the stock LangGraph Python SDK
(langgraph-sdk 0.3), unchanged, against a started `runner serve`. Run by
sdk_test.go's TestPythonSDK with RUNNER_URL and LANGGRAPH_API_KEY set,
where `import langgraph_sdk` works. Each check prints one line; a failure
prints what was expected and what came back, and the script exits 1."""

import os
import sys
import time
import traceback

import httpx
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError

client = get_sync_client(url=os.environ["RUNNER_URL"])  # key from LANGGRAPH_API_KEY
AGENT = "rule_37"  # seed 000's agent: its scripted model asks for an approved create_entity
INPUT = {"messages": [{"role": "user", "content": "Add the new Mitchell Ranch 3H well."}]}
checks = []


def check(fn):
    checks.append(fn)
    return fn


def interrupt_of(parts):
    for p in parts:
        if isinstance(p.data, dict) and p.data.get("__interrupt__"):
            return p.data["__interrupt__"]
    return None


def paused_thread(**kw):
    thread = client.threads.create(**kw)
    parts = list(client.runs.stream(thread["thread_id"], AGENT, input=INPUT, stream_mode=["updates", "values"]))
    return thread, parts


def answer(values):
    ai = [m for m in values.get("messages", []) if m.get("type") == "ai" and m.get("content")]
    return ai[-1]["content"] if ai else ""


def created(values):
    return sum(1 for r in values.get("tool_results", []) if r.get("tool_name") == "create_entity" and r.get("ok"))


@check
def stream_to_the_interrupt_then_state():
    thread, parts = paused_thread(metadata={"suite": "py"})
    assert parts[0].event == "metadata" and parts[0].data["run_id"], parts[0]
    intr = interrupt_of(parts)
    assert intr and intr[0]["id"] and intr[0]["value"]["action_requests"], parts
    t = client.threads.get(thread["thread_id"])
    assert t["status"] == "interrupted", t["status"]
    st = client.threads.get_state(thread["thread_id"])
    assert st["next"] and any(len(task["interrupts"]) == 1 for task in st["tasks"]), st
    found = client.threads.search(metadata={"suite": "py"}, status="interrupted", limit=100)
    assert any(x["thread_id"] == thread["thread_id"] for x in found), found


@check
def resume_with_decisions_then_history_newest_first():
    thread, _ = paused_thread()
    parts = list(client.runs.stream(thread["thread_id"], AGENT, command={"resume": {"decisions": [{"type": "approve"}]}},
                                    stream_mode="values"))
    last = [p for p in parts if p.event == "values"][-1].data
    assert "Mitchell Ranch 3H" in answer(last) and created(last) == 1, last
    hist = client.threads.get_history(thread["thread_id"], limit=100)
    st = client.threads.get_state(thread["thread_id"])
    assert hist[0]["checkpoint"]["checkpoint_id"] == st["checkpoint"]["checkpoint_id"], "newest first"


@check
def resuming_twice_runs_the_side_effect_once():
    thread, _ = paused_thread()
    client.runs.wait(thread["thread_id"], AGENT, command={"resume": {"approved": True}})
    try:
        client.runs.wait(thread["thread_id"], AGENT, command={"resume": {"approved": True}})
        raise AssertionError("the second resume succeeded")
    except httpx.HTTPStatusError as err:  # runs.wait raises httpx's own error: 409, final, not retried
        assert err.response.status_code == 409 and "nothing to resume" in err.response.text, err.response.text
    values = client.threads.get_state(thread["thread_id"])["values"]
    assert created(values) == 1, values


@check
def runs_wait_create_join_and_join_stream_replay():
    thread = client.threads.create()
    values = client.runs.wait(thread["thread_id"], AGENT, input=INPUT)
    assert values.get("__interrupt__"), values
    run = client.runs.create(thread["thread_id"], AGENT, command={"resume": {"approved": True}})
    joined = client.runs.join(thread["thread_id"], run["run_id"])
    assert "Mitchell Ranch 3H" in answer(joined), joined
    every = list(client.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="-1"))
    assert every[0].event == "metadata" and len(every) > 2, every
    runs = client.runs.list(thread["thread_id"])
    assert {r["status"] for r in runs} == {"success", "interrupted"}, [r["status"] for r in runs]


@check
def busy_thread_reject_is_409_and_cancel_leaves_it_idle():
    thread = client.threads.create()
    run = client.runs.create(thread["thread_id"], AGENT, input=INPUT)  # its first reply is slow
    try:
        client.runs.create(thread["thread_id"], AGENT, input=INPUT, multitask_strategy="reject")
        raise AssertionError("a second run on a busy thread was accepted")
    except ConflictError:
        pass
    client.runs.cancel(thread["thread_id"], run["run_id"], wait=True)
    assert client.runs.get(thread["thread_id"], run["run_id"])["status"] == "interrupted"
    assert client.threads.get(thread["thread_id"])["status"] == "idle"


@check
def update_state_as_a_node():
    thread, _ = paused_thread()
    client.threads.update_state(thread["thread_id"], {"messages": [{"type": "human", "content": "note"}]})
    values = client.threads.get_state(thread["thread_id"])["values"]
    assert values["messages"][-1]["content"] == "note", values["messages"][-1]


@check
def stateless_wait_and_problem_details():
    values = client.runs.wait(None, "fraud_investigator", input={"transaction_id": "txn_1001"})
    assert values.get("status") == "COMPLETED", values
    try:
        client.threads.get("00000000-0000-4000-8000-000000000000")
        raise AssertionError("an unknown thread was found")
    except NotFoundError as err:
        assert err.response.headers["content-type"].startswith("application/problem+json"), err.response.headers


failed = 0
for fn in checks:
    try:
        fn()
        print(f"ok   {fn.__name__}")
    except Exception:
        failed += 1
        print(f"FAIL {fn.__name__}\n{traceback.format_exc()}")
print(f"{len(checks) - failed}/{len(checks)} passed")
sys.exit(1 if failed else 0)
