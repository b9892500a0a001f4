# idemgate: FastCGI idempotency gateway, its operator tools and tests.
#
#   make            build idemgate, idemctl, idemtop        (build/)
#   make run        install deps, start MariaDB + lighttpd + idemgate demo
#   make test       install deps, run every test; ends "N passed, N failed"
#   make bench      idemgate vs fcgiwrap through lighttpd, with wrk
#   make asan       the same binaries with ASan + UBSan     (build-asan/)
#   make fuzz       libFuzzer harnesses                     (build-fuzz/)
#   make install    install (PREFIX=/usr/local, DESTDIR for staging)
#   make format     clang-format the C sources
#   make deps       apt-get install what is missing (as root)
#   make clean

B	?= build
CC	?= cc
OPT	?= -O2
MYSQL_CFLAGS	:= $(shell mariadb_config --cflags 2>/dev/null)
MYSQL_LIBS	:= $(shell mariadb_config --libs 2>/dev/null || echo -lmariadb)
CURSES_CFLAGS	:= $(shell pkg-config --cflags ncursesw 2>/dev/null)
CURSES_LIBS	:= $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw -ltinfo)
WARN	= -Wall -Wextra -Werror -Wno-unused-parameter
CFLAGS	+= $(CPPFLAGS) -std=c11 -D_GNU_SOURCE $(OPT) -g -pthread $(WARN) $(MYSQL_CFLAGS) $(SAN)
LDFLAGS	+= -pthread $(SAN)
LIBS	= $(MYSQL_LIBS) -lssl -lcrypto

LIB_DIRS	:= base cfg ident store run idem
LIB_SRC		:= $(sort $(wildcard $(LIB_DIRS:%=lib/%/*.c)))
FCGI_SRC	:= $(sort $(wildcard fcgi/*.c))
CTL_SRC		:= $(sort $(wildcard admin/idemctl*.c))
TOP_SRC		:= $(sort $(wildcard admin/idemtop*.c))
UNIT_SRC	:= $(sort $(wildcard tests/unit/test_*.c))
ITBIN_SRC	:= $(sort $(wildcard tests/it/*.c))
FUZZ_SRC	:= $(sort $(wildcard tests/fuzz/fuzz_*.c))

LIB_OBJ		:= $(LIB_SRC:%.c=$(B)/%.o) $(B)/gen/migrations.o $(B)/gen/grants.o
FCGI_OBJ	:= $(FCGI_SRC:%.c=$(B)/%.o)
CTL_OBJ		:= $(CTL_SRC:%.c=$(B)/%.o)
TOP_OBJ		:= $(TOP_SRC:%.c=$(B)/%.o)
# fcgi/ objects other than main, for unit tests of fcgi/ modules
FCGI_LIBOBJ	:= $(filter-out $(B)/fcgi/main.o,$(FCGI_OBJ))
CTL_LIBOBJ	:= $(filter-out $(B)/admin/idemctl.o,$(CTL_OBJ))
TOP_LIBOBJ	:= $(filter-out $(B)/admin/idemtop.o,$(TOP_OBJ))

UNIT_BIN	:= $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
ITBIN		:= $(ITBIN_SRC:tests/it/%.c=$(B)/tests/it/%)
PROGS		:= $(B)/idemgate $(B)/idemctl $(B)/idemtop

PREFIX		?= /usr/local
SYSCONFDIR	?= /etc
SBINDIR		 = $(PREFIX)/sbin
BINDIR		 = $(PREFIX)/bin
MANDIR		 = $(PREFIX)/share/man
DOCDIR		 = $(PREFIX)/share/doc/idemgate
# Files other programs load (Prometheus rules, a Grafana dashboard): not
# under doc/, which Debian lets an administrator leave out.
DATADIR		 = $(PREFIX)/share/idemgate
UNITDIR		?= $(PREFIX)/lib/systemd/system
# Web-server wiring, one line per server, "FOLDER:DIR": every file of
# etc/FOLDER goes into $(SYSCONFDIR)/DIR, 0644 (the .deb's conffiles).
WEBCONF		 = lighttpd:lighttpd/conf-available \
		   nginx:nginx/snippets \
		   caddy:caddy

.PHONY: all run test bench soak asan fuzz format clean deps tests install install-files
# Keep test objects between builds.
.SECONDARY:
all: $(PROGS)
tests: $(PROGS) $(UNIT_BIN) $(ITBIN)

# Each folder sees its own headers and those below it, no more.  lib/ is
# layered (ARCHITECTURE.md): base; cfg and ident on base; store on cfg
# and ident; run on ident; idem on all of them.  lib/ cannot reach up
# into fcgi/ or admin/, and neither program sees the other's.
INC_base	:= -Ilib/base
INC_cfg		:= $(INC_base) -Ilib/cfg
INC_ident	:= $(INC_base) -Ilib/ident
INC_store	:= $(INC_cfg) -Ilib/ident -Ilib/store
INC_run		:= $(INC_ident) -Ilib/run
INC_idem	:= $(INC_store) -Ilib/run -Ilib/idem
INC_lib		:= $(INC_idem)
INC_fcgi	:= $(INC_lib) -Ifcgi
INC_admin	:= $(INC_lib) -Iadmin $(CURSES_CFLAGS)
INC_tests	:= $(INC_lib) -Ifcgi -Iadmin -Itests/lib $(CURSES_CFLAGS)
LIB_H		:= $(wildcard $(LIB_DIRS:%=lib/%/*.h))

# $* is "store/store_sql": the folder names the wall.
$(B)/lib/%.o: lib/%.c $(LIB_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_$(patsubst %/,%,$(dir $*))) -c -o $@ $<

$(B)/fcgi/%.o: fcgi/%.c $(LIB_H) $(wildcard fcgi/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_fcgi) -c -o $@ $<

$(B)/admin/%.o: admin/%.c $(LIB_H) $(wildcard admin/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_admin) -c -o $@ $<

$(B)/tests/%.o: tests/%.c $(LIB_H) $(wildcard fcgi/*.h admin/*.h tests/lib/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_tests) -c -o $@ $<

# The list itself, rewritten (as the makefile is read) only when it
# changes: a migration taken away rebuilds the embedding too.
MIGRATIONS := $(sort $(wildcard sql/[0-9]*.sql))
$(shell mkdir -p $(B)/gen && { echo '$(MIGRATIONS)' | cmp -s - \
    $(B)/gen/migrations.list || echo '$(MIGRATIONS)' > \
    $(B)/gen/migrations.list; })

$(B)/gen/migrations.c: $(MIGRATIONS) $(B)/gen/migrations.list tools/embed_sql.sh
	@mkdir -p $(dir $@)
	sh tools/embed_sql.sh $(MIGRATIONS) > $@

$(B)/gen/migrations.o: $(B)/gen/migrations.c lib/store/migrations.h
	$(CC) $(CFLAGS) $(INC_store) -c -o $@ $<

$(B)/gen/grants.c: sql/grants.sql tools/embed_grants.sh
	@mkdir -p $(dir $@)
	sh tools/embed_grants.sh sql/grants.sql > $@

$(B)/gen/grants.o: $(B)/gen/grants.c lib/store/grants.h
	$(CC) $(CFLAGS) $(INC_store) -c -o $@ $<

$(B)/libidem.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(B)/libgw.a: $(FCGI_LIBOBJ)
	rm -f $@
	ar rcs $@ $^

$(B)/libadmin.a: $(CTL_LIBOBJ) $(TOP_LIBOBJ)
	rm -f $@
	ar rcs $@ $^

$(B)/idemgate: $(FCGI_OBJ) $(B)/libidem.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/idemctl: $(CTL_OBJ) $(B)/libidem.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/idemtop: $(TOP_OBJ) $(B)/libidem.a
	$(CC) $(LDFLAGS) -o $@ $^ $(CURSES_LIBS) $(LIBS)

# A unit test links lib/ and, if it tests one, its program's modules
# (never a main() file).
GW_TESTS	:= $(addprefix $(B)/tests/,test_fconn test_guard test_park \
		    test_reach test_reader test_upstream test_upstream_lease)
ADMIN_TESTS	:= $(addprefix $(B)/tests/,test_idemctl test_idemtop)
$(GW_TESTS): $(B)/libgw.a
$(ADMIN_TESTS): $(B)/libadmin.a
$(B)/tests/%: $(B)/tests/unit/%.o $(B)/libidem.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) \
	    $(filter-out $(B)/libidem.a,$(filter %.a,$^)) $(B)/libidem.a \
	    $(if $(filter $@,$(ADMIN_TESTS)),$(CURSES_LIBS)) $(LIBS)

# Helper programs for integration tests (CGI handlers, a libfcgi app, ...).
$(B)/tests/it/%: $(B)/tests/it/%.o $(B)/libidem.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lfcgi $(LIBS)

asan:
	$(MAKE) B=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" tests

# A harness links the modules it fuzzes (fcgi/ ones from libgw.a), never
# includes their .c files.
fuzz:
	$(MAKE) B=build-fuzz CC=clang OPT=-O1 SAN="-fsanitize=fuzzer-no-link,address,undefined" build-fuzz/libidem.a build-fuzz/libgw.a
	@mkdir -p build-fuzz/fuzz
	for f in $(FUZZ_SRC); do \
		n=$$(basename $$f .c); \
		clang -std=c11 -D_GNU_SOURCE -O1 -g $(INC_lib) -Ifcgi $(MYSQL_CFLAGS) -fsanitize=fuzzer,address,undefined \
			-o build-fuzz/fuzz/$$n $$f build-fuzz/libgw.a build-fuzz/libidem.a $(LIBS) -lpthread || exit 1; \
	done

deps:
	@sh tools/deps.sh

run: deps all
	@bash tools/run.sh

test: deps
	@bash tests/run.sh

bench: deps all
	@bash bench/bench.sh

# Long fault runs, not part of `make test` (tests/soak.sh).
soak: deps
	@bash tests/soak.sh

install: all install-files

# The programs in $(B) as they are (make install builds them first).
install-files:
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 \
	    $(DESTDIR)$(DOCDIR) $(DESTDIR)$(UNITDIR) \
	    $(DESTDIR)$(SYSCONFDIR)/idemgate \
	    $(DESTDIR)$(SYSCONFDIR)/apache2/conf-available \
	    $(DESTDIR)$(DATADIR)/prometheus $(DESTDIR)$(DATADIR)/grafana
	install -m 0755 $(B)/idemgate $(DESTDIR)$(SBINDIR)/idemgate
	install -m 0755 $(B)/idemctl $(B)/idemtop $(DESTDIR)$(BINDIR)/
	install -m 0644 fcgi/idemgate.8 admin/idemctl.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 admin/idemtop.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 etc/idemgate.conf $(DESTDIR)$(DOCDIR)/idemgate.conf.example
	install -m 0644 sql/grants-migrate.sql sql/grants.sql README.md \
	    etc/my.cnf.example $(DESTDIR)$(DOCDIR)/
	install -m 0644 etc/prometheus/idemgate.rules.yml \
	    $(DESTDIR)$(DATADIR)/prometheus/
	install -m 0644 etc/grafana/idemgate-dashboard.json \
	    $(DESTDIR)$(DATADIR)/grafana/
	install -m 0644 etc/apache2/idemgate.conf etc/apache2/idemgate-php.conf \
	    $(DESTDIR)$(SYSCONFDIR)/apache2/conf-available/
	@$(SHELL) tools/install-conf.sh etc/idemgate.conf \
	    $(DESTDIR)$(SYSCONFDIR)/idemgate/idemgate.conf "$(DESTDIR)"
	for u in etc/systemd/*; do \
		sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@BINDIR@|$(BINDIR)|g' \
		    -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $$u \
		    > $(DESTDIR)$(UNITDIR)/$$(basename $$u) || exit 1; \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$(basename $$u); \
	done
	for w in $(WEBCONF); do \
		d=$(DESTDIR)$(SYSCONFDIR)/$${w#*:}; \
		install -d $$d && install -m 0644 etc/$${w%%:*}/* $$d/ || exit 1; \
	done

format:
	clang-format -i $(wildcard lib/*/*.[ch] fcgi/*.[ch] admin/*.[ch] tests/*/*.[ch])

clean:
	rm -rf build build-asan build-fuzz
