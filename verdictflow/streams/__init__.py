"""Stream plumbing: settings, the Faust app factory, the topic registry, the embedded broker."""
