# mk/install.mk - make install / uninstall: the library, its headers and
# pkg-config file, shmctl and its man page, the LICENSE. uninstall is
# install's mirror image; both honour DESTDIR and PREFIX. tests/install.sh
# checks them.

HEADERS := $(sort $(wildcard include/*.h))
MANPAGE := tools/shmctl.1
PC := $(BUILD)/$(NAME).pc

# Regenerated on every install, so a changed PREFIX is never stale.
.PHONY: $(PC)
$(PC): src/$(NAME).pc.in
	@mkdir -p $(@D)
	$(call quiet,GEN,$@)sed -e 's|@prefix@|$(PREFIX)|g' \
		-e 's|@exec_prefix@|$(exec_prefix)|g' \
		-e 's|@libdir@|$(libdir)|g' \
		-e 's|@includedir@|$(includedir)|g' \
		-e 's|@version@|$(VERSION)|g' $< > $@

# The dynamic loader finds a library in a directory of its own (ld.so.conf:
# /usr/local/lib on Debian) only once its cache lists it: a system install
# (no DESTDIR, as root, into such a directory) runs ldconfig, as packages
# do; uninstall too, so the cache forgets it. A DESTDIR install is staged
# for a package, whose own scripts run it; a PREFIX elsewhere (a home
# directory, /opt/...) is not the loader's: link with -Wl,-rpath (README,
# Installing). ldconfig -v -N -X lists the loader's directories, changing
# nothing.
LDCONFIG ?= ldconfig
define ldconfig-if-system
	$(Q)if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && \
	    $(LDCONFIG) -v -N -X 2>/dev/null | grep -q '^$(libdir):'; then \
		echo '$(LDCONFIG)   (a system library directory)'; \
		$(LDCONFIG); \
	fi
endef

.PHONY: install uninstall
install: $(LIBS_ALL) $(SHMCTL) $(PC)
	$(INSTALL) -d $(DESTDIR)$(libdir) $(DESTDIR)$(includedir) \
		$(DESTDIR)$(pkgconfigdir)
	$(INSTALL) -m 644 $(LIB_A) $(DESTDIR)$(libdir)/
	$(INSTALL) -m 755 $(LIB_SO_REAL) $(DESTDIR)$(libdir)/
	ln -sf libshmkv.so.$(VERSION) $(DESTDIR)$(libdir)/libshmkv.so.$(MAJOR)
	ln -sf libshmkv.so.$(MAJOR) $(DESTDIR)$(libdir)/libshmkv.so
	$(INSTALL) -m 644 $(HEADERS) $(DESTDIR)$(includedir)/
	$(INSTALL) -m 644 $(PC) $(DESTDIR)$(pkgconfigdir)/
	$(INSTALL) -d $(DESTDIR)$(bindir) $(DESTDIR)$(mandir)/man1
	$(INSTALL) -m 755 $(SHMCTL) $(DESTDIR)$(bindir)/
	$(INSTALL) -m 644 $(MANPAGE) $(DESTDIR)$(mandir)/man1/
	$(INSTALL) -d $(DESTDIR)$(docdir)
	$(INSTALL) -m 644 LICENSE $(DESTDIR)$(docdir)/
	$(ldconfig-if-system)

uninstall:
	rm -f $(DESTDIR)$(libdir)/libshmkv.a
	rm -f $(DESTDIR)$(libdir)/libshmkv.so.$(VERSION)
	rm -f $(DESTDIR)$(libdir)/libshmkv.so.$(MAJOR)
	rm -f $(DESTDIR)$(libdir)/libshmkv.so
	rm -f $(addprefix $(DESTDIR)$(includedir)/,$(notdir $(HEADERS)))
	rm -f $(DESTDIR)$(pkgconfigdir)/$(NAME).pc
	rm -f $(DESTDIR)$(bindir)/shmctl
	rm -f $(DESTDIR)$(mandir)/man1/$(notdir $(MANPAGE))
	rm -f $(DESTDIR)$(docdir)/LICENSE
	$(ldconfig-if-system)
