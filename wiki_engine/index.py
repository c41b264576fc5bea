"""One scope's search index: tantivy (bm25 with block-max pruning) for keywords, SQLite FTS5 for
typeahead on titles, and an in-memory matrix of embeddings for meaning.

Everything lives in ``index/<scope>/``; an index never holds documents of another scope.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tantivy

from .embed import Embedder

_STOP = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is it its
    me my of on or our so than that the their them then there these they this to was we were what when where which
    who whom why will with would you your about any did does done just shall should""".split()
)


def query_terms(text: str) -> list[str]:
    """Lower-case word terms of a query, stop words removed (all of them kept if nothing else is left)."""
    import re

    words = [w for w in re.findall(r"[0-9a-zA-Z\u00C0-\u024F]+", text.lower()) if w]
    kept = [w for w in words if w not in _STOP]
    return kept or words


@dataclass(frozen=True)
class Doc:
    """One indexed document: a source or a page of this scope."""

    id: str
    kind: str  # "source" | "page"
    title: str
    body: str
    ts: float
    importance: float | None = None


class ScopeIndex:
    def __init__(self, folder: Path, embedder: Embedder | None):
        self.folder = folder
        self.embedder = embedder
        folder.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self.meta = sqlite3.connect(str(folder / "meta.db"), isolation_level=None, check_same_thread=False, timeout=30)
        self.meta.execute("PRAGMA journal_mode=WAL")
        self.meta.execute("PRAGMA synchronous=NORMAL")
        self.meta.executescript(
            """
            CREATE TABLE IF NOT EXISTS docs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, title TEXT NOT NULL,
                body TEXT NOT NULL, ts REAL NOT NULL, importance REAL, vec BLOB);
            CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE VIRTUAL TABLE IF NOT EXISTS titles USING fts5(title, id UNINDEXED, kind UNINDEXED,
                prefix='2 3 4', tokenize='unicode61 remove_diacritics 2');
            """
        )
        self._open_tantivy()
        self._writer: tantivy.IndexWriter | None = None
        self._dirty = False
        self._load_vectors()

    # ---- setup ---------------------------------------------------------------------------------

    def _open_tantivy(self) -> None:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
        sb.add_text_field("title", stored=False, tokenizer_name="en_stem")
        sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
        self.schema = sb.build()
        tdir = self.folder / "tantivy"
        tdir.mkdir(exist_ok=True)
        self.index = tantivy.Index(self.schema, path=str(tdir), reuse=True)
        self.searcher = self.index.searcher()

    def _load_vectors(self) -> None:
        name = self.embedder.name if self.embedder else ""
        row = self.meta.execute("SELECT value FROM info WHERE key='embedder'").fetchone()
        if row is not None and row[0] != name and self.embedder is not None:
            # Vectors of another model are meaningless here: recompute them from the stored text.
            rows = self.meta.execute("SELECT id, title, body FROM docs").fetchall()
            self.meta.execute("BEGIN")
            for start in range(0, len(rows), 512):
                chunk = rows[start : start + 512]
                vecs = self.embedder.embed([f"{t}\n{b}" for _, t, b in chunk])
                self.meta.executemany("UPDATE docs SET vec=? WHERE id=?", [(v.tobytes(), r[0]) for v, r in zip(vecs, chunk, strict=True)])
            self.meta.execute("COMMIT")
        self.meta.execute("INSERT OR REPLACE INTO info VALUES ('embedder', ?)", (name,))
        ids: list[str] = []
        ts: list[float] = []
        imp: list[float] = []
        blobs: list[bytes] = []
        for i, t, im, v in self.meta.execute("SELECT id, ts, importance, vec FROM docs"):
            ids.append(i)
            ts.append(t)
            imp.append(-1.0 if im is None else im)
            blobs.append(v or b"")
        self.ids = ids
        self.row = {i: n for n, i in enumerate(ids)}
        self.ts = np.asarray(ts, dtype=np.float64)
        self.imp = np.asarray(imp, dtype=np.float32)
        self.alive = np.ones(len(ids), dtype=bool)
        dim = self.embedder.dim if self.embedder else 0
        if dim:
            mat = np.zeros((len(ids), dim), dtype=np.float32)
            for n, v in enumerate(blobs):
                if len(v) == dim * 4:
                    mat[n] = np.frombuffer(v, dtype=np.float32)
            self.vecs = mat
        else:
            self.vecs = np.zeros((len(ids), 0), dtype=np.float32)
        self._pending: list[tuple[str, float, float, np.ndarray | None]] = []

    # ---- writing -------------------------------------------------------------------------------

    def _w(self) -> tantivy.IndexWriter:
        if self._writer is None:
            last: Exception | None = None
            for _ in range(100):
                try:
                    self._writer = self.index.writer(heap_size=64_000_000, num_threads=1)
                    break
                except ValueError as e:  # another process holds tantivy's writer lock: wait for it
                    last = e
                    time.sleep(0.05)
            else:
                raise RuntimeError(f"The search index in {self.folder} is locked by another process ({last}); try again.")
        assert self._writer is not None
        return self._writer

    def add(self, docs: list[Doc]) -> None:
        """Adds (or replaces) documents. Visible to search after ``commit``."""
        if not docs:
            return
        with self._lock:
            vecs: np.ndarray | None = self.embedder.embed([f"{d.title}\n{d.body}" for d in docs]) if self.embedder else None
            w = self._w()
            self.meta.execute("BEGIN")
            try:
                rows = []
                titles = []
                for n, d in enumerate(docs):
                    if d.id in self.row:
                        self._remove_locked(w, d.id)
                    w.add_document(tantivy.Document(id=d.id, title=d.title, body=d.body))
                    v = vecs[n] if vecs is not None else None
                    rows.append((d.id, d.kind, d.title, d.body, d.ts, d.importance, v.tobytes() if v is not None else None))
                    if d.title:
                        titles.append((d.title, d.id, d.kind))
                    self._pending.append((d.id, d.ts, -1.0 if d.importance is None else d.importance, v))
                    self.row[d.id] = -1  # placeholder until pending rows are merged
                self.meta.executemany("INSERT OR REPLACE INTO docs VALUES (?,?,?,?,?,?,?)", rows)
                self.meta.executemany("INSERT INTO titles (title, id, kind) VALUES (?,?,?)", titles)
                self.meta.execute("COMMIT")
            except BaseException:
                self.meta.execute("ROLLBACK")
                raise
            self._dirty = True

    def _remove_locked(self, w: tantivy.IndexWriter, doc_id: str) -> None:
        w.delete_documents_by_term("id", doc_id)
        self.meta.execute("DELETE FROM docs WHERE id=?", (doc_id,))
        self.meta.execute("DELETE FROM titles WHERE id=?", (doc_id,))
        n = self.row.pop(doc_id, None)
        if n is not None and n >= 0:
            self.alive[n] = False
        elif n == -1:
            self._pending = [p for p in self._pending if p[0] != doc_id]

    def remove(self, ids: list[str]) -> None:
        with self._lock:
            present = [i for i in ids if i in self.row]
            if not present:
                return
            w = self._w()
            self.meta.execute("BEGIN")
            for i in present:
                self._remove_locked(w, i)
            self.meta.execute("COMMIT")
            self._dirty = True

    def commit(self) -> None:
        """Makes added and removed documents visible to search and releases the index writer."""
        with self._lock:
            if self._writer is not None:
                self._writer.commit()
                self._writer.wait_merging_threads()
                self._writer = None
                self.index.reload()
                self.searcher = self.index.searcher()
            self._merge_pending()
            self._dirty = False

    def _merge_pending(self) -> None:
        if not self._pending:
            return
        base = len(self.ids)
        dim = self.vecs.shape[1]
        new_ids = [p[0] for p in self._pending]
        self.ids.extend(new_ids)
        for n, i in enumerate(new_ids):
            self.row[i] = base + n
        self.ts = np.concatenate([self.ts, np.asarray([p[1] for p in self._pending], dtype=np.float64)])
        self.imp = np.concatenate([self.imp, np.asarray([p[2] for p in self._pending], dtype=np.float32)])
        self.alive = np.concatenate([self.alive, np.ones(len(new_ids), dtype=bool)])
        if dim:
            add = np.stack([p[3] if p[3] is not None else np.zeros(dim, np.float32) for p in self._pending])
            self.vecs = np.concatenate([self.vecs, add.astype(np.float32)])
        else:
            self.vecs = np.zeros((len(self.ids), 0), dtype=np.float32)
        self._pending = []
        if self.alive.size and self.alive.sum() < 0.7 * self.alive.size:
            self._compact()

    def _compact(self) -> None:
        keep = np.nonzero(self.alive)[0]
        self.ids = [self.ids[k] for k in keep]
        self.row = {i: n for n, i in enumerate(self.ids)}
        self.ts, self.imp, self.vecs = self.ts[keep], self.imp[keep], self.vecs[keep]
        self.alive = np.ones(len(self.ids), dtype=bool)

    def clear(self) -> None:
        with self._lock:
            w = self._w()
            w.delete_all_documents()
            self.meta.executescript("DELETE FROM docs; DELETE FROM titles;")
            self.ids, self.row = [], {}
            self.ts = np.zeros(0, np.float64)
            self.imp = np.zeros(0, np.float32)
            self.alive = np.zeros(0, bool)
            self.vecs = np.zeros((0, self.vecs.shape[1]), np.float32)
            self._pending = []
            self._dirty = True

    # ---- reading -------------------------------------------------------------------------------

    def all_ids(self) -> set[str]:
        return {r[0] for r in self.meta.execute("SELECT id FROM docs")}

    def count(self) -> int:
        return len(self.row)

    def keyword(self, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """bm25 top ``limit`` (id, score) for any of the terms (OR), title matches weighted up."""
        if not terms:
            return []
        if self._dirty:
            self.commit()
        q = self.index.parse_query(" ".join(terms), ["title", "body"], field_boosts={"title": 1.5})
        searcher = self.searcher
        res = searcher.search(q, limit, count=False)
        return [(searcher.doc(addr)["id"][0], float(score)) for score, addr in res.hits]

    def vector(self, qvec: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """Top ``limit`` (id, cosine) by brute-force dot product over this scope's vectors."""
        if self._dirty:
            self.commit()
        if not self.vecs.shape[1] or not self.ids:
            return []
        # einsum, not BLAS: OpenBLAS threads make a small matrix-vector product 100x slower on busy cores.
        sims = np.einsum("ij,j->i", self.vecs, qvec.astype(np.float32))
        if not self.alive.all():
            sims = np.where(self.alive, sims, -2.0)
        limit = min(limit, sims.size)
        top = np.argpartition(-sims, limit - 1)[:limit]
        top = top[np.argsort(-sims[top])]
        return [(self.ids[n], float(sims[n])) for n in top if sims[n] > -2.0]

    def similarity(self, doc_id: str, qvec: np.ndarray) -> float:
        n = self.row.get(doc_id)
        if n is None or n < 0 or not self.vecs.shape[1]:
            return 0.0
        return float(self.vecs[n] @ qvec)

    def features(self, doc_id: str) -> tuple[float, float]:
        """(ts, importance or -1) of a live document."""
        n = self.row.get(doc_id)
        if n is None or n < 0:
            return 0.0, -1.0
        return float(self.ts[n]), float(self.imp[n])

    def typeahead(self, prefix: str, limit: int) -> list[tuple[str, str, str]]:
        """(id, kind, title) whose title has words starting with the typed words (last one as a prefix)."""
        import re

        words = re.findall(r"[0-9a-zA-Z\u00C0-\u024F]+", prefix.lower())
        if not words:
            return []
        expr = " ".join(f'"{w}"' for w in words[:-1]) + (" " if len(words) > 1 else "") + f'"{words[-1]}"*'
        with self._lock:
            rows = self.meta.execute(
                "SELECT id, kind, title FROM titles WHERE titles MATCH ? LIMIT ?", (expr, limit)
            ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def docs(self, ids: list[str]) -> dict[str, tuple[str, str, str, float, float | None]]:
        """id -> (kind, title, body, ts, importance) for the given ids."""
        if not ids:
            return {}
        with self._lock:
            marks = ",".join("?" * len(ids))
            rows = self.meta.execute(f"SELECT id, kind, title, body, ts, importance FROM docs WHERE id IN ({marks})", ids)
            return {r[0]: (r[1], r[2], r[3], r[4], r[5]) for r in rows}

    def close(self) -> None:
        with self._lock:
            if self._writer is not None or self._pending:
                self.commit()
            self.meta.close()


def remove_index_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
