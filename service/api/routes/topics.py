"""``GET /topics`` and ``GET /topics/{id}``: the top words of each topic."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query, status

from service.api.deps import SettingsDep, SnapshotDep, check_top
from service.api.schemas import ErrorOut, OneTopicOut, TopicOut, TopicsOut, WordOut, timestamp
from service.snapshot import WordWeight

router = APIRouter(tags=["topics"])

_TOP = "Words per topic, most probable first (at most the setting topic_words)"


def _words(words: list[WordWeight], top: int) -> list[WordOut]:
    return [WordOut(word=w.word, weight=w.weight) for w in words[:top]]


@router.get("/topics", response_model=TopicsOut, responses={503: {"model": ErrorOut}})
def list_topics(
    snapshot: SnapshotDep,
    settings: SettingsDep,
    top: Annotated[int, Query(description=_TOP)] = 10,
) -> TopicsOut:
    """Every topic with its ``top`` most probable words."""
    check_top(top, settings)
    return TopicsOut(
        docs_seen=snapshot.docs_seen,
        updated_at=timestamp(snapshot.updated_at),  # type: ignore[arg-type]
        sampler=snapshot.sampler,
        topics=[TopicOut(id=i, words=_words(w, top)) for i, w in enumerate(snapshot.topics)],
    )


@router.get(
    "/topics/{topic_id}",
    response_model=OneTopicOut,
    responses={404: {"model": ErrorOut}, 503: {"model": ErrorOut}},
)
def get_topic(
    snapshot: SnapshotDep,
    settings: SettingsDep,
    topic_id: Annotated[int, Path(description="Topic id, 0 to K-1")],
    top: Annotated[int, Query(description=_TOP)] = 20,
) -> OneTopicOut:
    """One topic with its ``top`` most probable words; 404 for an id outside 0..K-1."""
    check_top(top, settings)
    if not 0 <= topic_id < snapshot.num_topics:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"no topic {topic_id}: topic ids are 0 to {snapshot.num_topics - 1}",
        )
    return OneTopicOut(
        id=topic_id,
        words=_words(snapshot.topics[topic_id], top),
        docs_seen=snapshot.docs_seen,
        updated_at=timestamp(snapshot.updated_at),  # type: ignore[arg-type]
        sampler=snapshot.sampler,
    )
