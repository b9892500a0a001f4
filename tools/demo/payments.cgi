#!/bin/sh
# Demo legacy handler: "charges" a card by appending a line to the ledger.
# It knows nothing of retries; a double charge shows up as two lines.
ledger=../ledger.txt
body=$(head -c "${CONTENT_LENGTH:-0}")
n=$(( $(wc -l < "$ledger" 2>/dev/null || echo 0) + 1 ))
sleep "${DEMO_DELAY:-0.5}"
printf '%s charge #%s %s %s\n' "$(date -u +%H:%M:%S)" "$n" "$REQUEST_METHOD" "$body" >> "$ledger"
printf 'Status: 201 Created\r\n'
printf 'Content-Type: application/json\r\n'
printf 'Location: /payments/%s\r\n' "$n"
printf '\r\n'
printf '{"charge":%s,"body":"%s"}\n' "$n" "$(printf '%s' "$body" | tr -d '"\\')"
