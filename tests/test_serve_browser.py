"""`kgnorm serve` as a person uses it (issue 40): the real command on a real port, Debian's chromium
driven by Selenium through Debian's chromedriver (no browser download). The person opens the
document list, opens a document, clicks a mention, picks another candidate in the panel, and the
graph says so (the saved query current_links), then hides and shows a type's highlights; a document whose text holds a <script> and a
concept whose name holds an <img onerror> render as text. Ctrl-C stops the server cleanly.

Skipped where chromium or chromedriver is missing, unless KGNORM_REQUIRE_BROWSER is set (CI)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from annotate_fixtures import DOCS, OBO, write_jsonl
from cli_runner import run

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
EVIL_NAME = '"><img src=x onerror=alert(1)> syndrome'
EVIL_TEXT = "<script>alert(1)</script> A note on breast cancer."

if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
    if os.environ.get("KGNORM_REQUIRE_BROWSER"):
        raise RuntimeError("KGNORM_REQUIRE_BROWSER is set but chromium / chromedriver are not installed")
    pytest.skip("Debian's chromium and chromium-driver are not installed", allow_module_level=True)


def _json(capsys, store: str, *args: str) -> list[dict]:
    code, out, err = run(capsys, "query", *args, "--format", "json", "--store", store)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture()
def served(capsys, tmp_path, tiny_bert_dir):
    """A store with the toy documents annotated (plus the hostile ones), and `kgnorm serve` on it."""
    store = f"ladybug://{tmp_path}/graph"
    obo = tmp_path / "toyd.obo"
    obo.write_text(OBO + f"\n[Term]\nid: TOYD:0666\nname: {EVIL_NAME}\nis_a: TOYD:0000\n", encoding="utf-8")
    code, _, err = run(capsys, "ingest", "obo", str(obo), "--ontology", "toyd", "--store", store, "-q")
    assert code == 0, err
    model = tmp_path / "biosyn"
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "toyd", "--out", str(model), "--encoder",
                       str(tiny_bert_dir), "--store", store, "-q")
    assert code == 0, err
    src = write_jsonl(tmp_path / "docs.jsonl", [*DOCS, {"id": "x1", "text": EVIL_TEXT}])
    code, _, err = run(capsys, "annotate", "--ner", "dictionary:toyd", "--model", str(model), "--input", str(src),
                       "--input-format", "jsonl", "--output", str(tmp_path / "o.pubtator"), "--store", store, "-q")
    assert code == 0, err
    proc = subprocess.Popen([sys.executable, "-m", "kgnorm.cli.app", "serve", "--store", store, "--model", str(model),
                             "--port", "0",
                             "--reviewer", "browser-test"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = token = ""
    deadline = time.monotonic() + 60
    while not (url and token) and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("token: "):
            token = line.split(":", 1)[1].strip()
        elif "http://" in line:
            url = line[line.index("http://"):].split()[0].rstrip("/")
    if not (url and token):
        proc.kill()
        pytest.fail(f"kgnorm serve printed no URL and token: {proc.stderr.read()}")
    yield store, url, token, proc
    if proc.poll() is None:
        proc.kill()


@pytest.fixture()
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,900"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.implicitly_wait(5)
    try:
        yield driver
    finally:
        driver.quit()


def _no_alert(driver) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text


def _screenshot(driver, name: str) -> None:
    """KGNORM_SCREENSHOTS=DIR keeps the pages as PNGs (how docs/ got its pictures)."""
    where = os.environ.get("KGNORM_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(where) / name))


def test_a_curator_picks_another_candidate_and_the_graph_says_so(capsys, served, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    store, url, _, proc = served
    browser.get(f"{url}/documents")
    browser.find_element(By.LINK_TEXT, "d1").click()
    WebDriverWait(browser, 10).until(ec.url_contains("d1"))
    marks = browser.find_elements(By.CSS_SELECTOR, "[data-mention]")
    texts = {m.text: m for m in marks}
    assert "breast cancer" in texts, sorted(texts)
    target = texts["breast cancer"]
    uid = target.get_attribute("data-mention")
    before = [r for r in _json(capsys, store, "--saved", "current_links") if r["mention_uid"] == uid][0]
    _screenshot(browser, "serve-document.png")
    target.click()
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[data-candidate]"))
    candidates = browser.find_elements(By.CSS_SELECTOR, "[data-candidate]")
    other = next(c for c in candidates if c.get_attribute("data-candidate") not in (before["concept"], "TOYD:0666"))
    chosen = other.get_attribute("data-candidate")
    other.click()
    deadline = time.monotonic() + 20
    now = before
    while time.monotonic() < deadline:
        now = [r for r in _json(capsys, store, "--saved", "current_links") if r["mention_uid"] == uid][0]
        if now["source"] == "review":
            break
        time.sleep(0.3)
    assert (now["concept"], now["source"], now["decision"]) == (chosen, "review", "concept")
    assert now["reviewer"] == "browser-test"
    # the page shows the mention as reviewed after the decision
    WebDriverWait(browser, 10).until(lambda d: "review" in (d.find_element(
        By.CSS_SELECTOR, f"[data-mention='{uid}']").get_attribute("class") or ""))
    _no_alert(browser)
    # the search box offers the mention's own ontology; the type filter takes a type's highlights away and back
    WebDriverWait(browser, 10).until(lambda d: "Another concept (toyd)" in d.find_element(By.ID, "panel").text)
    box = browser.find_element(By.CSS_SELECTOR, "#types input[data-type-class]")
    box.click()
    assert all("filtered" in m.get_attribute("class") for m in browser.find_elements(By.CSS_SELECTOR, "#doctext mark"))
    box.click()
    assert not any("filtered" in m.get_attribute("class")
                   for m in browser.find_elements(By.CSS_SELECTOR, "#doctext mark"))
    # Ctrl-C stops the server cleanly
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) == 0


def test_hostile_text_and_names_render_as_text(capsys, served, browser):
    from selenium.webdriver.common.by import By

    store, url, _, _ = served
    browser.get(f"{url}/documents/x1")
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "<script>alert(1)</script>" in body
    _no_alert(browser)
    assert not browser.find_elements(By.XPATH, "//script[contains(text(), 'alert(1)')]")
    browser.get(f"{url}/concepts/TOYD:0666")
    assert EVIL_NAME in browser.find_element(By.TAG_NAME, "body").text
    assert not browser.find_elements(By.CSS_SELECTOR, "img[src='x']")
    _no_alert(browser)
    _screenshot(browser, "serve-concept-escaped.png")


def _wait_for(what, timeout: float = 20.0):
    """Poll `what()` until it gives something true (the page's writes reach the store through the journal)."""
    deadline = time.monotonic() + timeout
    got = what()
    while not got and time.monotonic() < deadline:
        time.sleep(0.3)
        got = what()
    return got


def test_the_queue_a_decision_for_the_same_text_its_time_and_a_withdrawal(capsys, served, browser):
    """Issue 50: the queue serves the least sure text first; a key decides it with its time and for
    the same text elsewhere, and moves on; the progress counts it; /runs shows the reviewer's pace;
    on the document page the review is withdrawn and the history lists both, newest first."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    store, url, _, _ = served
    browser.get(f"{url}/queue")
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.qrow")
    texts = [r.find_element(By.TAG_NAME, "strong").text for r in rows]
    assert len({t.lower() for t in texts}) == len(texts) and "breast cancer" in {t.lower() for t in texts}
    before = int(browser.find_element(By.ID, "n-reviewed").text)
    body = browser.find_element(By.TAG_NAME, "body")
    while True:  # j down to the breast cancer row (its text is in three mentions)
        body.send_keys("j")
        WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "tr.qrow.selected"))
        row = browser.find_element(By.CSS_SELECTOR, "tr.qrow.selected")
        if row.find_element(By.TAG_NAME, "strong").text.lower() == "breast cancer":
            break
    uid = row.get_attribute("data-mention")
    doc_link = row.find_element(By.TAG_NAME, "a").get_attribute("href")  # its document, at this mention
    WebDriverWait(browser, 10).until(lambda d: "Candidates" in d.find_element(By.ID, "panel").text)
    time.sleep(0.6)  # the curator reads for a while
    body.send_keys("x")  # nil, for this text everywhere
    WebDriverWait(browser, 10).until(lambda d: "done" in (row.get_attribute("class") or ""))
    WebDriverWait(browser, 10).until(lambda d: int(d.find_element(By.ID, "n-reviewed").text) == before + 3)
    assert browser.find_element(By.CSS_SELECTOR, "tr.qrow.selected").get_attribute("data-mention") != uid
    _screenshot(browser, "serve-queue.png")
    reviews = _wait_for(lambda: [r for r in _json(capsys, store, "--saved", "reviews") if r["decision"] == "nil"])
    first = next(r for r in reviews if r["mention_uid"] == uid)
    assert first["reviewer"] == "browser-test" and first["elapsed_ms"] >= 600 and not first["propagated_from"]
    copies = [r for r in reviews if r["propagated_from"] == first["review"]]
    assert len(copies) == 2 and {r["mention"].lower() for r in copies} == {"breast cancer"}
    browser.get(f"{url}/runs")
    pace = browser.find_element(By.ID, "reviewers").text
    assert "browser-test" in pace and "Reviews per hour" in pace
    # withdraw on the document page: the mention is the machine's again, and the history keeps both
    browser.get(doc_link)
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.ID, "withdraw"))
    browser.find_element(By.ID, "withdraw").click()
    WebDriverWait(browser, 10).until(lambda d: not d.find_elements(By.ID, "withdraw"))
    history = browser.find_element(By.ID, "history").find_elements(By.TAG_NAME, "li")
    assert [h.text.split()[2] for h in history] == ["withdraw", "nil"]
    assert all("by browser-test" in h.text for h in history) and re.search(r" in \d+\.\d s", history[1].text)
    mark = browser.find_element(By.CSS_SELECTOR, f"mark[data-mention='{uid}']")
    assert "reviewed" not in mark.get_attribute("class")
    now = _wait_for(lambda: [r for r in _json(capsys, store, "--saved", "current_links")
                             if r["mention_uid"] == uid and r["source"] == "machine"])
    assert now
    # a second reviewer answers otherwise: the document page marks the conflict, /runs the agreement
    browser.find_element(By.TAG_NAME, "body").send_keys("x")
    WebDriverWait(browser, 10).until(lambda d: "reviewed" in mark.get_attribute("class"))
    name = browser.find_element(By.ID, "reviewer")
    name.clear()
    name.send_keys("second")
    mark.click()
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[data-candidate]"))
    browser.find_elements(By.CSS_SELECTOR, "[data-candidate]")[0].click()
    WebDriverWait(browser, 10).until(lambda d: "conflict" in mark.get_attribute("class"))
    WebDriverWait(browser, 10).until(lambda d: "reviewers disagree" in d.find_element(By.ID, "panel").text)
    _screenshot(browser, "serve-conflict.png")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    _no_alert(browser)
    browser.get(f"{url}/runs")
    agreement = browser.find_element(By.ID, "agreement").text
    assert "browser-test · second" in agreement and "0% (0)" in agreement


def test_a_document_marked_done_once_every_mention_is_reviewed(capsys, served, browser):
    """Issue 50: "Document done" is refused while a mention has no review (the page says how many and
    opens the first of them); once each is decided by key, the button marks the document done."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    _, url, _, _ = served
    browser.get(f"{url}/documents/d2")
    marks = browser.find_elements(By.CSS_SELECTOR, "#doctext mark[data-mention]")
    assert marks and "not marked done" in browser.find_element(By.ID, "done-state").text
    browser.find_element(By.ID, "mark-done").click()
    alert = WebDriverWait(browser, 30).until(expected_conditions.alert_is_present())
    assert f"has {len(marks)} unreviewed mention(s)" in alert.text
    alert.accept()
    first = WebDriverWait(browser, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, "#doctext mark.selected"))
    assert first.get_attribute("data-mention") == marks[0].get_attribute("data-mention")
    body = browser.find_element(By.TAG_NAME, "body")
    for mark in marks:  # each decided by key: nil
        mark.click()
        WebDriverWait(browser, 30).until(lambda d: "Candidates" in d.find_element(By.ID, "panel").text)
        body.send_keys("x")
        WebDriverWait(browser, 30).until(lambda d, m=mark: "reviewed" in m.get_attribute("class"))
    browser.find_element(By.ID, "mark-done").click()
    WebDriverWait(browser, 30).until(lambda d: "done: marked by browser-test" in d.find_element(By.ID, "done-state").text)
    _no_alert(browser)
    _screenshot(browser, "serve-done.png")
