# Sourced by bench/component.sh and bench/npm.sh: `to_result_lines` turns every human line
# "LABEL: X (goal <= G ..." or "(goal < G ..." on stdin into a line
# RESULT|metric|Xx|<= Gx|pass-or-FAIL for bench/run.sh (metric = LABEL in snake_case), and
# every "LABEL: X (report ..." into RESULT|metric|Xx|report|-. A ratio carries `x`; a figure with
# a unit says it after the number and after the goal ("LABEL: X KB (goal <= G KB ..."), and
# keeps it: RESULT|metric|X KB|<= G KB|pass-or-FAIL.
to_result_lines() {
  awk '{
    if (match($0, /^[^:]+: [0-9.]+( [A-Za-z]+)? \(goal (<=|<) [0-9.]+/)) {
      head = substr($0, 1, RLENGTH)
      split(head, parts, ": ")
      metric = tolower(parts[1]); gsub(/[^a-z0-9]+/, "_", metric)
      n = split(parts[2], rest, " ")
      value = rest[1]; op = rest[n - 1]; goal = rest[n]
      unit = (n == 5) ? " " rest[2] : "x"
      ok = (op == "<=") ? (value + 0 <= goal + 0) : (value + 0 < goal + 0)
      printf "RESULT|%s|%s%s|%s %s%s|%s\n", metric, value, unit, op, goal, unit, (ok ? "pass" : "FAIL")
    } else if (match($0, /^[^:]+: [0-9.]+( [A-Za-z]+)? \(report/)) {
      split($0, parts, ": ")
      metric = tolower(parts[1]); gsub(/[^a-z0-9]+/, "_", metric)
      n = split(parts[2], rest, " ")
      unit = (rest[2] ~ /^\(/) ? "x" : " " rest[2]
      printf "RESULT|%s|%s%s|report|-\n", metric, rest[1], unit
    }
  }'
}
