#!/bin/sh
# make install's config step: install SRC as DST (0640) unless DST exists,
# and give it to group idemgate as the package's postinst does, so the
# units (User=idemgate, ExecStartPre=idemgate -t) can read it.  Under a
# DESTDIR (staging, packaging) the owner is the packager's business.
#   tools/install-conf.sh SRC DST DESTDIR
src=$1
dst=$2
destdir=$3

if [ -e "$dst" ]; then
	echo "install: $dst exists, kept as it is"
	exit 0
fi
install -m 0640 "$src" "$dst" || exit 1
[ -z "$destdir" ] || exit 0
if getent group idemgate >/dev/null 2>&1; then
	chgrp idemgate "$dst" || exit 1
else
	echo "install: no group idemgate yet: run" \
	    "'adduser --system --group --no-create-home --home /nonexistent" \
	    "idemgate' and 'chgrp idemgate $dst', or the units cannot read it"
fi
