# tests/limits/limits.mk - the list limits (Note [List limits]), included by
# the Makefile.
#
#   limits-test   generated lists at each limit (16 backends; 64 keyset bits
#                 with every row per backend; ...) compile as C99 and every
#                 key round-trips; one past each limit fails to compile, as
#                 C99 and as C++, with the #error that names the limit

.PHONY: limits-test
test: limits-test

limits-test: | $(BUILD) ## lists at each limit work; one past each limit stops the compile with a message naming it (C99, C++)
	@sh tests/limits/limits.sh "$(CC)" "$(CXX)" $(BUILD)/limits $(BUILD)/results
