<?php
// The payments handler as a PHP app under PHP-FPM, for tests/it: it counts
// its own runs in runs/pay.runs ("start"/"end" lines with timestamps and
// the IDEMGATE_FENCE it got) and logs a line to runs/pay.overlap when it
// starts while another run still holds its lock: never trust the
// gateway's word for how often a handler ran.  It keeps running after its
// client went away (ignore_user_abort), as payment code does.
ignore_user_abort(true);
$dir = __DIR__ . '/runs';
$ms = (int)($_GET['sleep'] ?? 0);
$id = bin2hex(random_bytes(4));
$fence = $_SERVER['IDEMGATE_FENCE'] ?? '-';
$log = function ($what) use ($dir, $id, $fence) {
	file_put_contents("$dir/pay.runs", sprintf("%s %.3f %s fence=%s\n",
	    $what, microtime(true), $id, $fence), FILE_APPEND | LOCK_EX);
};
$lk = fopen("$dir/pay.lock", 'c');
$alone = flock($lk, LOCK_EX | LOCK_NB);
if (!$alone)
	file_put_contents("$dir/pay.overlap", sprintf("%.3f %s\n",
	    microtime(true), $id), FILE_APPEND | LOCK_EX);
$log('start');
usleep($ms * 1000);
$log('end');
// status1xx=1: an answer that is no answer (a CGI may not give 1xx)
// status=N: answer with N (a 500 releases the key)
http_response_code(isset($_GET['status']) ? (int)$_GET['status'] :
    (isset($_GET['status1xx']) ? 103 : 201));
header('Content-Type: application/json');
if (!isset($_GET['status1xx']) && !isset($_GET['status']))
	header('Location: /payments/' . $id);
// pad=N: N more bytes of body (an answer over max_response streams)
if (isset($_GET['pad']))
	echo str_repeat('p', (int)$_GET['pad']), "\n";
echo json_encode(['id' => $id, 'fence' => $fence,
    'key_id' => $_SERVER['IDEMGATE_KEY_ID'] ?? '-',
    'body' => file_get_contents('php://input')]), "\n";
// linger=MS: the answer goes out and the request ends
// (fastcgi_finish_request), then the script works on MS more, its lock
// held, as payment code that sends a receipt after answering
if (isset($_GET['linger'])) {
	fastcgi_finish_request();
	usleep((int)$_GET['linger'] * 1000);
	$log('lingered');
}
