"""K no-op nodes in a LangGraph StateGraph, checkpointed by PostgresSaver with
durability="sync" (each superstep's checkpoint is written before the next runs)."""

from __future__ import annotations

import uuid
from typing import TypedDict

from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, StateGraph

from bench.peers._common import args, measure


class State(TypedDict):
    n: int


def step(state: State) -> State:
    return {"n": state["n"] + 1}


def main() -> None:
    a = args()
    ks = [int(k) for k in a.ks.split(",")]
    with PostgresSaver.from_conn_string(a.dsn) as saver:
        saver.setup()
        graphs = {}
        for k in ks:
            g = StateGraph(State)
            prev = START
            for i in range(k):
                g.add_node(f"s{i}", step)
                g.add_edge(prev, f"s{i}")
                prev = f"s{i}"
            g.add_edge(prev, END)
            graphs[k] = g.compile(checkpointer=saver)

        def job(k: int) -> None:
            cfg = {"configurable": {"thread_id": str(uuid.uuid4())}}
            out = graphs[k].invoke({"n": 0}, cfg, durability="sync")
            assert out["n"] == k

        measure(a.dsn, ks, a.runs, job)


if __name__ == "__main__":
    main()
