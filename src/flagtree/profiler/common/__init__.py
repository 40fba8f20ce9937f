"""What the recording side and the viewer both need, so that recording never imports the viewer.

- safe_text.py: the one rule for printing names a profile or a command line carries (control
  characters escaped), used by the session, the command, the rank tools and the viewer;
- devices.py: device facts (the peak-throughput table, DRAM peak bandwidth from device_info),
  used by backends that report peaks in the metadata and by the viewer's ``util`` metric.
"""
