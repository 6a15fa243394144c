"""The page while topics move, in headless Chromium on the real API and a real Redis: the
topics listed by number, a newly born one marked "new", and the recent moves shown; with K
fixed the moves' section stays hidden."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis

from service.api.app import create_app
from service.settings import Settings
from tests.service.api import shaped
from tests.service.api.test_page import IN_CHROMIUM, dump_dom, element, rows, text
from tests.service.conftest import serve

pytestmark = IN_CHROMIUM


def test_the_page_marks_born_topics_and_lists_the_moves(
    redis_client: redis.Redis, settings: Settings, tmp_path: Path
) -> None:
    shaped.publish(redis_client, shaped.shaped_model())  # first: the app reads it before serving
    with serve(create_app(settings)) as url:
        dom = dump_dom(url, tmp_path / "profile")
    listed = rows(dom)
    assert [k for k, _ in listed] == shaped.LIVE, dom[:3000]
    new = {k for k, row in listed if 'class="tag new"' in row}
    assert new == {4, 5}  # born among the moves shown
    moves = element(dom, r'<section id="moves".*?</section>')
    assert "hidden" not in moves.split(">")[0]
    said = text(moves)
    assert "3 live topics; 2 born, 2 merged and 1 retired" in said
    items = re.findall(r'<li class="move (\w+)">', moves)
    assert items == ["merge", "birth", "birth", "retire", "merge"]
    assert "topic 0 merged into topic 3" in said and "topic 2 retired" in said
    assert "topic 5 born" in said and "at 100 documents" in said


@pytest.mark.usefixtures("published")
def test_a_fixed_k_shows_no_moves(served: str, tmp_path: Path) -> None:
    dom = dump_dom(served, tmp_path / "profile")
    assert [k for k, _ in rows(dom)] == [0, 1, 2]
    assert re.search(r'<section id="moves"[^>]*hidden', dom)
    assert 'class="tag new"' not in dom
