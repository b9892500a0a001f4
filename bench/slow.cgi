#!/bin/sh
# Bench handler: a slow legacy charge (300 ms), for waiter latency.
cat >/dev/null
sleep 0.3
printf 'Status: 201 Created\r\nContent-Type: text/plain\r\n\r\ncharged\n'
