"""Look-up base examples: the argument is the user's number, the reply the asked
field's value, and neither can be memorised."""

import json
import re

import numpy as np

from experiments.world.lookup import FIELDS, make_lookup


def test_argument_copies_the_number_and_reply_quotes_the_asked_field():
    ids, values, zh = set(), set(), 0
    for i in range(200):
        ex = make_lookup(np.random.default_rng([7, i]))
        user, call, tool, reply = ex["messages"][1:]
        (args,) = [c["arguments"] for c in call["tool_calls"]]
        ((key, n),) = args.items()
        assert key in json.dumps(ex["tools"])  # the id parameter is in the schema
        assert re.findall(r"\d+", user["content"]) == [str(n)]
        record = json.loads(tool["content"])
        assert record[key] == n and len(record) >= 4
        asked = [
            f for f in record if f in FIELDS and str(record[f]) in reply["content"]
        ]
        assert asked, (user, reply)
        # The reply's numbers are the id and one value of the record.
        nums = re.findall(r"\d+", reply["content"])
        assert str(n) in nums and set(nums) <= {str(v) for v in record.values()}
        ids.add(n)
        values.add(record[asked[0]])
        zh += any("\u4e00" <= ch <= "\u9fff" for ch in user["content"])
    assert len(ids) > 40 and len(values) > 80  # nothing to memorise
    assert 60 < zh < 140  # both languages


def test_drill_mix_is_short_lookups_only(tmp_path):
    from experiments.world.base_data import write_base_data
    from hat_jax.harness import read_jsonl

    counts = write_base_data(tmp_path / "d.jsonl", n=50, seed=0, mix="drill")
    assert counts == {"drill": 50}
    for t in read_jsonl(tmp_path / "d.jsonl"):
        assert [m["role"] for m in t.messages] == ["user", "assistant", "tool"] + [
            "assistant"
        ]
        assert len(t.meta["tools"]) == 1 and len(t.messages[0]["content"]) < 60
