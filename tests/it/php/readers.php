<?php
// For tests/it/t_canon_diff: how PHP reads request bodies.  Run by
// php-cli with a file of cases (one JSON object a line: {"t": ctype,
// "b": base64 body}) it prints one line per case: PHP's reading, written
// so that two readings are equal exactly when PHP's values are (arrays
// with string keys compared as sets of keys, lists in order; a float
// that is a whole number below 2^53 read as that integer, as the
// canonical form reads 1.0 as 1).  Over PHP-FPM (SCRIPT_FILENAME = this
// file, a POST) it prints the reading of $_POST and $_FILES instead.
function norm($v) {
	if (is_array($v)) {
		$out = [];
		foreach ($v as $k => $x)
			$out[] = [is_int($k) ? "i:$k" : "s:$k", norm($x)];
		usort($out, fn($a, $b) => strcmp($a[0], $b[0]));
		return ['A', $out];
	}
	if (is_float($v)) {
		if (is_finite($v) && floor($v) == $v && abs($v) < 9007199254740992)
			return 'n:' . sprintf('%.0f', $v) . ($v == 0 && fdiv(1, $v) < 0 ? '-' : '');
		return 'n:' . var_export($v, true);
	}
	if (is_int($v))
		return "n:$v";
	if (is_string($v))
		return 's:' . $v;
	return var_export($v, true);
}
function reading($t, $body) {
	if (stripos($t, 'json') !== false) {
		$v = json_decode($body, true, 512, JSON_BIGINT_AS_STRING);
		if (json_last_error() !== JSON_ERROR_NONE)
			return 'ERR';
		return json_encode(norm($v));
	}
	parse_str($body, $v);
	return json_encode(norm($v));
}
if (PHP_SAPI === 'fpm-fcgi') {
	$files = [];
	foreach ($_FILES as $k => $f)
		$files[$k] = [$f['name'], $f['type'], $f['error'],
		    is_file($f['tmp_name'] ?? '') ? hash_file('sha256', $f['tmp_name']) : '-'];
	header('Content-Type: text/plain');
	echo json_encode([norm($_POST), norm($files)]), "\n";
	exit;
}
foreach (file($argv[1], FILE_IGNORE_NEW_LINES) as $line) {
	$c = json_decode($line, true);
	echo base64_encode(reading($c['t'], base64_decode($c['b']))), "\n";
}
