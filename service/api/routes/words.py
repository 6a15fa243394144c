"""``GET /words/{word}/topics``: the topics a word ranks highest in, with its probability in
each, from the published model (the one ``/infer`` uses).

The word goes through the learner's tokeniser, so "River" finds "river"; a word outside the
vocabulary, or text that is no word or several, is a 404 that says which. The route is a plain
function: FastAPI runs it on its thread pool, since a word met for the first time reads the
whole beta once.
"""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, HTTPException, Path, Query, Response, status

from service.api.deps import ModelCacheDep, RedisDep
from service.api.http.etags import JSON
from service.api.http.query_params import Integer, strict
from service.api.reads.word_topics import word_topics
from service.api.schemas import INVALID, ErrorOut, WordTopicsOut

router = APIRouter(tags=["words"])

MOST_TOPICS = 1000
TOPIC_WORDS = 5  # each topic's own top words shown beside the word's place in it


@router.get(
    "/words/{word}/topics",
    dependencies=[Depends(strict({"top": Integer(1, MOST_TOPICS)}))],
    response_model=WordTopicsOut,
    responses={
        404: {"model": ErrorOut, "description": "Not a word of the model's vocabulary"},
        **INVALID,
        503: {"model": ErrorOut, "description": "Redis is unreachable, or no model yet"},
    },
)
def topics_of_word(
    client: RedisDep,
    cache: ModelCacheDep,
    word: Annotated[str, Path(max_length=200, description="A word, as it appears in text")],
    top: Annotated[
        int, Query(ge=1, le=MOST_TOPICS, description="Topics listed, best rank first")
    ] = 5,
) -> Response:
    """The ``top`` topics in which the word ranks highest (its rank 1 is a topic's most
    probable word), with its probability and each topic's top words."""
    loaded = cache.get(client)
    if loaded is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "no model yet: the worker has not published its first model",
        )
    ids, _, tokens = loaded.words.encode([word])
    if int(tokens[0]) != 1:
        what = "no word" if int(tokens[0]) == 0 else f"{int(tokens[0])} words"
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"{word!r} is {what} to the tokeniser: ask for one word"
        )
    if ids.shape[0] == 0:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"{word!r} is not in the model's vocabulary of {len(loaded.model.vocab):,} words",
        )
    word_id = int(ids[0])
    model = loaded.model
    body = {
        "word": model.vocab[word_id],
        "word_id": word_id,
        "model_version": model.version,
        "docs_seen": model.docs_seen,
        "topics": word_topics(model, word_id, top, TOPIC_WORDS, loaded.word_ranks),
    }
    return Response(orjson.dumps(body), media_type=JSON)
