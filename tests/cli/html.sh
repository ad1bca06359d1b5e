#!/usr/bin/env bash
# `stepwatch analyze --html` writes one self-contained page: for a synthetic trace (always) and for
# every corpus Kineto file plus a two-rank directory (skipped, exit 77, without the corpus).
# Structure: parses, no network reference, a bar per step (or capped), the findings section.
# Render (when `chromium` is installed): headless Chromium loads each page with an error catcher
# injected first; the DOM it dumps must hold no error, and a screenshot goes to BUILD/html-shots/.
set -uo pipefail
cli=$1; build=$2; corpus=$3
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
shots="$build/html-shots"
mkdir -p "$shots"

chromium_bin=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium_bin" ]; then echo "chromium not installed: render check skipped"; fi

# The page's CSP applies only to what follows its meta tag, so a script placed first still runs:
# it records uncaught errors, console.error calls, failed loads and CSP violations into the DOM.
catcher='<script>(function(){var bad=[];function note(m){bad.push(String(m));var d=document.getElementById("sw-errors");if(d)d.textContent=bad.join(" | ");}
window.addEventListener("error",function(e){note((e.message||("load failed: "+((e.target&&(e.target.src||e.target.href))||"?"))));},true);
window.addEventListener("securitypolicyviolation",function(e){note("CSP violation: "+e.blockedURI);});
var ce=console.error;console.error=function(){note("console.error "+Array.prototype.join.call(arguments," "));ce.apply(console,arguments);};
document.addEventListener("DOMContentLoaded",function(){
document.querySelectorAll(".hbar span").forEach(function(s){if(s.offsetParent===null)return;var w=s.getBoundingClientRect().width,p=s.parentElement.getBoundingClientRect().width;if(w>p+0.5)note("label overflows its bar segment: "+s.textContent+" ("+Math.round(w)+" px in "+Math.round(p)+" px)");});
var d=document.createElement("div");d.id="sw-errors";d.textContent=bad.join(" | ");document.body.appendChild(d);});})();</script>'

check_structure() {  # html_file expected_ranks
  python3 - "$1" "$2" <<'PY'
import re, sys
from html.parser import HTMLParser
path, ranks = sys.argv[1], int(sys.argv[2])
text = open(path, encoding="utf-8").read()
void = {"meta", "br", "hr", "img", "input", "link"}
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []; self.errors = []; self.bars = 0; self.sections = 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k, v in attrs:
            if k in ("src", "href") and v and not v.startswith("#"):
                self.errors.append(f"external {k}={v}")
        if tag == "script": self.errors.append("script in the page")
        if tag == "g" and a.get("class") == "bar": self.bars += 1
        if tag == "section" and a.get("class") == "rank": self.sections += 1
        if tag not in void: self.stack.append(tag)
    def handle_startendtag(self, tag, attrs): pass
    def handle_endtag(self, tag):
        if tag in void: return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unbalanced </{tag}> (open: {self.stack[-3:]})"); return
        self.stack.pop()
p = P(); p.feed(text); p.close()
errs = p.errors[:]
if p.stack: errs.append(f"unclosed: {p.stack}")
if re.search(r"https?://", text): errs.append("http(s):// reference")
if re.search(r"\b(nan|-?inf)\b", text, re.I): errs.append("non-finite number")
if p.sections != ranks: errs.append(f"{p.sections} rank sections, expected {ranks}")
if "Where the step time goes" not in text and "No steps" not in text: errs.append("no breakdown")
if 'class="findings' not in text and "No findings" not in text: errs.append("no findings section")
if not (0 < p.bars <= 300 * ranks) and "No steps" not in text: errs.append(f"{p.bars} step bars")
if errs:
    print("\n".join(errs)); sys.exit(1)
PY
}

render() {  # html_file shot_name
  [ -n "$chromium_bin" ] || return 0
  local page="$out/render-$2.html" profile="$out/profile-$2"
  # The catcher goes right after <head>, before the CSP meta tag.
  python3 - "$1" "$page" "$catcher" <<'PY'
import sys
src, dst, catcher = sys.argv[1:4]
text = open(src, encoding="utf-8").read()
assert "<head>" in text
open(dst, "w", encoding="utf-8").write(text.replace("<head>", "<head>\n" + catcher, 1))
PY
  local flags=(--headless --no-sandbox --disable-gpu --user-data-dir="$profile" --no-first-run
               --disable-extensions --enable-logging=stderr --v=0)
  # The same window as the screenshot: the label check measures the layout it shows.
  timeout 120 "$chromium_bin" "${flags[@]}" --window-size=1400,2000 --dump-dom "file://$page" >"$out/dom.html" 2>"$out/chromium.log"
  local rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL: chromium exit $rc on $2"; tail -20 "$out/chromium.log"; return 1; fi
  if ! grep -q 'id="sw-errors"' "$out/dom.html"; then
    echo "FAIL: $2: the page did not finish loading in chromium"; tail -20 "$out/chromium.log"; return 1
  fi
  if grep -q 'id="sw-errors">[^<]' "$out/dom.html"; then
    echo "FAIL: $2: errors in chromium:"; grep -o 'id="sw-errors">[^<]*' "$out/dom.html"; return 1
  fi
  # Belt and braces: errors chromium itself logged from the page (CONSOLE lines at ERROR level).
  if grep -E 'Uncaught|console\.error|:ERROR:CONSOLE' "$out/chromium.log" | grep -v 'sw-errors' >/dev/null; then
    echo "FAIL: $2: console errors:"; grep -E 'Uncaught|console\.error|:ERROR:CONSOLE' "$out/chromium.log"; return 1
  fi
  rm -f "$shots/$2.png"
  timeout 120 "$chromium_bin" "${flags[@]}" --hide-scrollbars --window-size=1400,2000 \
    --screenshot="$shots/$2.png" "file://$1" >/dev/null 2>"$out/chromium.log"
  if [ ! -s "$shots/$2.png" ]; then echo "FAIL: no screenshot for $2"; tail -20 "$out/chromium.log"; return 1; fi
}

report() {  # name expected_ranks inputs...
  local name=$1 ranks=$2; shift 2
  "$cli" analyze -q --html "$out/$name.html" "$@" 2>"$out/err.txt"
  local rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL: exit $rc on $*"; cat "$out/err.txt"; return 1; fi
  check_structure "$out/$name.html" "$ranks" || { echo "FAIL: structure of the report for $*"; return 1; }
  render "$out/$name.html" "$name" || return 1
  [ "$name" != "synthetic-item_sync" ] || cp "$out/$name.html" "$shots/$name.html"
}

synth="$build/bin/stepwatch-synth"
[ -x "$synth" ] || { echo "FAIL: $synth not built"; exit 1; }
"$synth" --scenario item_sync -o "$out/item_sync.json.gz" >/dev/null || { echo "FAIL: stepwatch-synth"; exit 1; }
report synthetic-item_sync 1 "$out/item_sync.json.gz" || exit 1
grep -q 'hidden_sync' "$out/synthetic-item_sync.html" || { echo "FAIL: item_sync report lacks hidden_sync"; exit 1; }
# Several ranks: the page shows the multi-rank verdict (clock offsets, late ranks per step, the
# late_rank finding and its cause), since that page is what people share.
"$synth" --ranks 4 --straggler compute --straggler-rank 2 --clock-offsets-ms 0,50,-50,37 -o "$out/ranks" >/dev/null \
  || { echo "FAIL: stepwatch-synth --ranks"; exit 1; }
report synthetic-4-ranks 4 "$out/ranks" || exit 1
for want in 'id="merged"' '<td class="det">late_rank</td>' 'Late ranks per step' '<td>compute</td>' 'Clocks'; do
  grep -qF "$want" "$out/synthetic-4-ranks.html" || { echo "FAIL: the 4-rank page lacks $want"; exit 1; }
done
# An unwritable path is a clear error, exit 2.
"$cli" analyze -q --html "$out/no/such/dir/r.html" "$out/item_sync.json.gz" 2>/dev/null
[ $? -eq 2 ] || { echo "FAIL: unwritable --html path did not exit 2"; exit 1; }

if [ ! -d "$corpus/kineto" ]; then echo "ok: synthetic report; corpus not found at $corpus: corpus part skipped"; exit 77; fi
n=0
while IFS= read -r f; do
  rel=${f#"$corpus/kineto/"}
  name=$(printf '%s' "${rel%.json.gz}" | tr -c 'A-Za-z0-9._-' '_')
  report "$name" 1 "$f" || exit 1
  n=$((n + 1))
done < <(find "$corpus/kineto" -name '*.json.gz' | sort)
[ $n -ge 15 ] || { echo "FAIL: only $n corpus files"; exit 1; }
report hta-sampled-2ranks-all 2 "$corpus/kineto/hta-sampled-2ranks" || exit 1
echo "ok: synthetic + $n corpus files + one 2-rank report${chromium_bin:+, rendered in $($chromium_bin --version 2>/dev/null | head -1)}; screenshots in $shots"
