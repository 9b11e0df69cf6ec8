# Shared by the GPU scripts (sourced; `summary` names the file the lines also go to): PASS/FAIL lines
# counted in `fails`, a timer, and a JSON field printer without jq (the GPU machine has none).
fails=0
say() { echo "$*" | tee -a "$summary"; }
pass() { say "PASS $*"; }
failm() { say "FAIL $*"; fails=$((fails + 1)); }
now() { date +%s.%N; }
el() { python3 -c "print(f'{$2 - $1:.1f}')"; }
jqp() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
