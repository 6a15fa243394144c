"""The live topic-moves benchmark's checks on hand-made answers: what a gone number may answer,
which steps a move excuses, and the share of topics keeping their words."""

from __future__ import annotations

from typing import Any

from benchmarks.topic_moves_live import Evaluation, Move, kinds, stability, verdict

GONE = 410


def test_a_number_answers_live_merged_into_a_live_one_or_retired() -> None:
    answers: dict[int, tuple[int, dict[str, Any]]] = {
        1: (200, {}),
        2: (GONE, {"merged_into": 1, "retired_at": None}),
        3: (GONE, {"merged_into": 2, "retired_at": None}),  # a stale chain, followed
        4: (GONE, {"merged_into": None, "retired_at": {"docs_seen": 10}}),
        5: (GONE, {"merged_into": 4, "retired_at": None}),  # into one retired since
        6: (404, {}),
        7: (GONE, {"merged_into": 8, "retired_at": None}),
        8: (GONE, {"merged_into": 7, "retired_at": None}),  # a loop
    }
    assert verdict(1, answers) == "live"
    assert verdict(2, answers) == "merged into 1"
    assert verdict(3, answers) == "merged into 1"
    assert verdict(4, answers) == "retired"
    for wrong in (5, 6, 7, 9):
        assert verdict(wrong, answers) is None


def words(*firsts: str) -> list[str]:
    return [*firsts, *(f"w{i}" for i in range(10 - len(firsts)))]


def test_a_merge_keeper_is_excused_a_split_parent_only_when_asked() -> None:
    changed = [f"new{i}" for i in range(10)]
    evaluations = [
        Evaluation(0.0, 100, 100, {0: words(), 1: words(), 2: words(), 3: words()}),
        Evaluation(5.0, 200, 200, {0: words(), 1: changed, 2: changed, 3: words()}),
        Evaluation(9.0, 300, 300, {0: words(), 1: changed, 2: changed, 4: words()}),
    ]
    moves = [
        Move("merge", 150, "t", [1, 5]),
        Move("birth", 200, "t", [6, 2]),  # a split of 2
        Move("birth", 250, "t", [7]),
        Move("retire", 300, "t", [3]),
    ]
    counted = stability(evaluations, moves, split_parents=False)
    assert (counted.topics, counted.kept_topics) == (3, 2)  # 0, 1, 2 alive all along
    assert (counted.steps, counted.kept_steps, counted.excused_steps) == (5, 4, 1)
    assert counted.losers == {2: [0]}
    excused = stability(evaluations, moves, split_parents=True)
    assert (excused.kept_topics, excused.fraction) == (3, 1.0)
    assert kinds(moves) == {"birth": 2, "merge": 1, "retire": 1, "split": 1}


def test_the_first_model_says_which_topics_count_but_is_no_evaluation() -> None:
    young = Evaluation(0.0, 100, None, {0: words("a", "b", "c", "d", "e", "f"), 1: words()})
    evaluations = [
        Evaluation(5.0, 1000, 1000, {0: words(), 1: words(), 2: words()}),
        Evaluation(9.0, 2000, 2000, {0: words(), 1: words(), 2: words()}),
    ]
    checked = stability(evaluations, [], False, young)
    assert (checked.topics, checked.kept_topics, checked.steps) == (2, 2, 2)  # 2 came later
    with_young = stability([young, *evaluations], [], False, young)
    assert (with_young.topics, with_young.kept_topics, with_young.losers) == (2, 1, {0: [4]})
