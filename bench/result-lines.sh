# Sourced by bench/component.sh and bench/npm.sh: `to_result_lines` turns every human line
# "LABEL: X (goal <= G ..." or "(goal < G ..." on stdin into a line
# RESULT|metric|Xx|<= Gx|pass-or-FAIL for bench/run.sh (metric = LABEL in snake_case), and
# every "LABEL: X (report ..." into RESULT|metric|Xx|report|-.
to_result_lines() {
  awk '{
    if (match($0, /^[^:]+: [0-9.]+ \(goal (<=|<) [0-9.]+/)) {
      head = substr($0, 1, RLENGTH)
      split(head, parts, ": ")
      metric = tolower(parts[1]); gsub(/[^a-z0-9]+/, "_", metric)
      split(parts[2], rest, " ")
      value = rest[1]; op = rest[3]; goal = rest[4]
      ok = (op == "<=") ? (value + 0 <= goal + 0) : (value + 0 < goal + 0)
      printf "RESULT|%s|%sx|%s %sx|%s\n", metric, value, op, goal, (ok ? "pass" : "FAIL")
    } else if (match($0, /^[^:]+: [0-9.]+ \(report/)) {
      split($0, parts, ": ")
      metric = tolower(parts[1]); gsub(/[^a-z0-9]+/, "_", metric)
      split(parts[2], rest, " ")
      printf "RESULT|%s|%sx|report|-\n", metric, rest[1]
    }
  }'
}
