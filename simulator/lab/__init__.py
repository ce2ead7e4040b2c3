"""The lab: real Chromium loads real pages from real servers across an emulated link."""
