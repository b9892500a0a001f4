#!/bin/sh
# Bench handler: a slow legacy charge (300 ms; ?s=SECONDS for another).
cat >/dev/null
case $QUERY_STRING in
s=*) sleep "${QUERY_STRING#s=}" ;;
*) sleep 0.3 ;;
esac
printf 'Status: 201 Created\r\nContent-Type: text/plain\r\n\r\ncharged\n'
