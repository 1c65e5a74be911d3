# Per-generator CPack settings (read by cpack at packaging time): the .deb installs into /usr,
# the .tgz unpacks to a relocatable tree (bin/, lib/, include/) with no prefix of its own.
if(CPACK_GENERATOR STREQUAL "DEB")
  set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
else()
  set(CPACK_PACKAGING_INSTALL_PREFIX "")
endif()
