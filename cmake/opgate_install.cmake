# `cmake --install <build> [--prefix P]`: opgate into P/bin (on PATH for /usr/local or ~/.local),
# and what it reads at run time into P/share/opgate: the case files (cases/<stem>/*.json and their
# READMEs) and the golden files, which an installed opgate uses unless --root names another tree
# (tools/cli_common.cpp, repo_root). Nothing else is needed at run time: the ascend backend finds
# CANN itself (ASCEND_HOME_PATH).
# The layout is fixed (bin/, share/opgate/): repo_root finds the files from the binary's own path.
install(TARGETS opgate RUNTIME DESTINATION bin)
foreach(op IN LISTS OPGATE_OPS)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/cases/${op} DESTINATION share/opgate/cases
          FILES_MATCHING PATTERN "*.json" PATTERN "*.md")
endforeach()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/golden/ DESTINATION share/opgate/golden)
